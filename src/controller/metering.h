// Metering: the usage records of runs and of stopped instances' disks, what they are charged, and
// the statements made of the charges. A run is billed per second at the price locked when it began
// (prepaid packages first, then cash), up to the last moment its node was known to be up; its end
// charges the minimum billed duration unless the platform cut it short; a stopped instance keeps
// paying for its disk. Each month's first billing tick credits last month's SLA shortfalls.
//
// Invariants: a run has one record ("<instance>/<run>"), opened by its first report and closed
// once; a record's metered_until never moves back, and what was charged up to it is posted to the
// ledger exactly once (the posting's id carries the billed seconds); every record opened, closed
// or charged is in the pending ChangeSet, durable with the command, report or tick that did it.
//
// Part of the Controller (controller.h), which decides when a run begins and ends; Metering reads
// the instances (invoices describe runs, credits go to tenants) and changes none of them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "billing/billing.h"
#include "billing/invoice.h"
#include "common/clock.h"
#include "common/indexed_map.h"
#include "common/result.h"
#include "common/string_hash.h"
#include "controller/accounts.h"
#include "controller/change_set.h"
#include "controller/change_tracker.h"
#include "controller/downtime_log.h"
#include "controller/event_log.h"
#include "controller/node_registry.h"
#include "controller/pricing.h"
#include "model/accounts.h"
#include "model/instance.h"
#include "model/tenant.h"

namespace gpurent::controller {

class Metering {
 public:
  struct Context {
    const Clock& clock;
    ChangeSet& changes;  // the billing tick reserves its charges there at once
    ChangeTracker& tracker;
    EventLog& events;
    Accounts& accounts;  // its ledger takes the charges and credits
    Pricing& pricing;    // metering memoises its price lookups there
    const NodeRegistry& nodes;
    const DowntimeLog& downtime;  // what the SLA credits
    const std::string& currency;
    const IndexedMap<model::Instance>& instances;
  };
  explicit Metering(Context context) : c_(context) {}
  Metering(const Metering&) = delete;
  Metering& operator=(const Metering&) = delete;

  // The records from the store's snapshot; then reindex() once the instances are restored.
  void restore(Snapshot& snapshot);
  // Indexes the open runs of the restored instances for the billing tick.
  void reindex(IndexedMap<model::Instance>& instances);

  // --- Reads ---
  // The tenant's records, in the order they were opened.
  std::vector<const model::UsageRecord*> usage(std::string_view tenant_id) const;
  // The record of the instance's current run, or null (the run has not begun).
  const model::UsageRecord* current(const model::Instance& instance) const;
  // The price per GPU-hour the instance pays: its open run's locked price, else the book's for its
  // type, else (not placed yet) the dearest type it accepts.
  std::optional<Micros> price_per_gpu_hour(const model::Instance& instance) const;
  // SLA: each instance's platform-caused downtime, which statements credit (downtime_log.h). It
  // starts when a node fails (at the node's last good report) or a GPU under the instance is
  // quarantined, and ends when the instance runs again or is stopped.
  const DowntimeLog& downtime() const { return c_.downtime; }

  // --- Runs (the controller calls these as an instance's run begins and ends) ---
  // Opens the record of the instance's run, which began at `started` (its first report), at the
  // price in force then; the billing tick meters it from then on.
  void open_run(model::Instance& instance, Timestamp started);
  // Meters the instance's open run, if any, up to `until`.
  void meter(const model::Instance& instance, Timestamp until);
  // Meters the open run up to `until` and closes it; charges the minimum billed duration unless
  // `cut_short` (the platform ended it: a failure, a preemption, a move).
  void close_run(const model::Instance& instance, Timestamp until, bool cut_short);
  // The instance's node was unreachable until `now` and reports again: the open run is not billed
  // for the silence.
  void skip_silence(const model::Instance& instance, Timestamp now);
  // A stopped (failed, preempted) instance with a disk pays storage for it from now until
  // close_stopped_disk (it starts again or is removed). Other instances: nothing.
  void open_stopped_disk(const model::Instance& instance);
  void close_stopped_disk(const model::Instance& instance);

  // --- The billing tick ---
  // Meters every running instance up to `t` (or its node's last report, if earlier) and every
  // stopped disk up to `t`.
  void meter_all(Timestamp t);
  // At the first tick of a month, credits last month's instances whose availability fell short
  // (billing/sla.h); the credit's id makes a second pass (after a restart) a no-op.
  void settle_sla_credits();

  // --- Statements (caller as for Accounts::balance) ---
  Result<std::vector<billing::Month>> invoice_months(const model::Principal& caller,
                                                     std::string_view tenant_id) const;
  Result<billing::Invoice> invoice(const model::Principal& caller, std::string_view tenant_id,
                                   billing::Month month) const;

 private:
  Timestamp now() const { return c_.clock.now(); }
  model::UsageRecord* current_record(const model::Instance& instance);
  model::UsageRecord& add(model::UsageRecord record);
  // Meters one open run up to `until`: its packages first, then cash. `names`: its tenant's in the
  // ledger.
  void meter_run(model::UsageRecord& usage, Timestamp until, billing::Ledger::TenantNames names);
  // Posts a record's newly due charge, if any (billing::usage_transfer, packed in the ChangeSet),
  // and marks its metering changed; a failure is a bug, logged with the record.
  void post(model::UsageRecord& usage, Micros due);
  void post(model::UsageRecord& usage, Micros due, billing::Ledger::TenantNames names);
  // A run ends: the minimum billed duration of the version in force at its start.
  void charge_minimum_duration(model::UsageRecord& usage);
  void index_run(model::Instance& instance, model::UsageRecord& usage);
  void meter_runs(Timestamp t);

  Context c_;
  // By id; hashed, not ordered: nothing walks it, and each started run inserts one (8,000 at once
  // for an array), which in an ordered map is a descent of string comparisons. Never erased, and
  // node-based: pointers to records stay valid (the change tracker and metered_runs_ hold them).
  std::unordered_map<std::string, model::UsageRecord, StringHash, std::equal_to<>> usage_;
  std::unordered_map<std::string, std::vector<std::string>> usage_by_tenant_;
  // Open stopped-disk records: instance id -> usage record id.
  std::map<std::string, std::string, std::less<>> stopped_disks_;
  // The open runs the billing tick meters, in the order they began, with the instance and node
  // each runs on (the controller's instances and nodes are maps that never erase, so the pointers
  // stay valid): the tick does no lookups by name. Ended runs are dropped by the tick.
  struct MeteredRun {
    const model::Instance* instance;
    model::UsageRecord* usage;
    const model::Node* node;
    billing::Ledger::TenantNames names;  // its tenant's, in the ledger
  };
  std::vector<MeteredRun> metered_runs_;
  std::vector<Timestamp> metered_until_;  // meter_runs()'s, one per run; kept for its capacity
  std::string sla_settled_month_;         // "YYYY-MM"; in memory only (see settle_sla_credits)
};

}  // namespace gpurent::controller
