// What the controller hands to the store: the objects a batch of commands created or changed,
// and the ledger transfers it posted. Objects are upserted whole; transfers are appended and the
// store refuses a repeated transfer id. A Snapshot is the same data read back at start.
//
// Jobs are the exception to "whole": a job of a large array changes one task at a time, so a
// ChangeSet carries a changed job without its tasks (Job::tasks empty) and each changed task as
// its own JobTaskChange, upserted by (job, index). A Snapshot's jobs come back with their tasks.
//
// Metering is the other: the billing tick charges every running workload, so a usage charge and
// a usage record that only metering changed travel packed (UsageCharge, MeteredUsage below), in
// order among the whole forms; the store writes the same rows either way.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "controller/monitoring.h"
#include "model/accounts.h"
#include "model/audit.h"
#include "model/benchmark.h"
#include "model/event.h"
#include "model/gpu_quarantine.h"
#include "model/instance.h"
#include "model/job.h"
#include "model/ledger.h"
#include "model/node.h"
#include "model/price_book.h"
#include "model/template.h"
#include "model/tenant.h"
#include "model/volume.h"

namespace gpurent::controller {

struct Snapshot {
  std::vector<model::Tenant> tenants;
  std::vector<model::ApiKey> api_keys;
  std::vector<model::JoinToken> join_tokens;
  std::vector<model::Node> nodes;
  std::vector<model::Instance> instances;
  std::vector<model::Job> jobs;
  std::vector<model::Reservation> reservations;
  std::vector<model::Quota> quotas;
  std::vector<model::Template> templates;  // operators' own (the built-in ones are not stored)
  std::vector<model::UsageRecord> usage;
  std::vector<model::Volume> volumes;  // deleted ones too: they keep their billing record
  std::vector<model::IdempotencyRecord> idempotency;
  std::vector<model::Transfer> transfers;  // in the order they were posted
  // In seq order. A Snapshot holds only the most recent model::kMaxEventsInMemory.
  std::vector<model::Event> events;
  // In seq order. A Snapshot holds only the most recent model::kMaxAuditInMemory.
  std::vector<model::AuditRecord> audit;
  // The price book's versions: appended, never changed.
  std::vector<model::PriceVersion> price_versions;
  // Appended; the store keeps the newest billing::kMaxSpotPointsPerType per type.
  std::vector<model::SpotPricePoint> spot_prices;
  std::vector<model::PackageProduct> package_products;
  std::vector<model::Package> packages;
  std::vector<model::BalanceSettings> balance_settings;
  std::vector<model::Downtime> downtime;
  std::vector<model::GpuQuarantine> gpu_quarantines;  // released ones too; upserted by GPU UUID
  std::vector<model::GpuBenchmarkHistory> gpu_benchmarks;  // upserted by GPU UUID
  MonitoringSnapshot monitoring;  // rollups, the API's alert rules, alert history (monitoring.h)
};

// One task of a job as it is now (created or changed since the last ChangeSet).
struct JobTaskChange {
  std::string job_id;
  model::JobTask task;
};

// An operator's template set (template) or deleted (nullopt), in the order it happened.
struct TemplateChange {
  std::string name;
  std::optional<model::Template> template_;
};

// An object already serialized (its store body): see
// Controller::take_changes(Controller::Form::kStoreRows).
struct ObjectRow {
  std::string id;
  std::string tenant_id;
  std::string body;
};

// A usage record's charge, packed: the transfer billing::usage_transfer() would build (a
// "usage:" or "storage:" id from the tenant's cash account to platform revenue, referencing the
// instance), as plain values, so that the billing tick builds no model::Transfer (five heap
// strings) per running workload (bench/RESULTS.md, "Billing: one metering tick"). The store
// formats the id and account names while writing it.
struct UsageCharge {
  size_t position = 0;  // posted before transfers[position]: written in the order posted
  size_t text = 0;      // in ChangeSet::packed_text: the instance id, then the tenant id
  uint32_t instance_size = 0;
  uint32_t tenant_size = 0;
  model::UsageKind kind = model::UsageKind::kRun;
  int64_t run = 0;
  int64_t billed_seconds = 0;  // the record's, once charged: it names the transfer
  Timestamp at{};              // the record's metered_until, once charged
  Micros amount = 0;
};

// A usage record that only metering changed since it was last handed over whole, packed: its id
// and the fields metering advances (billing/billing.h; the others are fixed when the record
// opens, and closing it hands it over whole). The store updates these fields of the stored row.
struct MeteredUsage {
  size_t position = 0;  // written after usage[0, position): the order the changes happened in
  size_t text = 0;      // in ChangeSet::packed_text: the record's id
  uint32_t id_size = 0;
  Micros price_per_gpu_hour = 0;
  Timestamp metered_until{};
  int64_t billed_seconds = 0;
  Micros charged = 0;
  Micros segment_rate = 0;
  int64_t segment_seconds = 0;
  Micros segment_charged = 0;
  int64_t package_seconds = 0;
};

struct ChangeSet : Snapshot {
  // Instances already serialized, written after `instances`. A producer uses one form or the
  // other, never both, so that merged batches keep their order.
  std::vector<ObjectRow> instance_rows;
  std::vector<JobTaskChange> job_tasks;  // Snapshot::jobs hold no tasks here: these are they
  // Snapshot::templates is unused here: templates are deleted too, so changes keep their order.
  std::vector<TemplateChange> template_changes;

  // Not persisted: nodes whose desired set changed (long-polls to wake) and instances whose
  // state changed (log followers to wake), after the change is durable. An instance is listed
  // once per batch the controller takes (change_tracker.h); merged batches may list it again,
  // and waking twice is harmless.
  std::set<std::string> woken_nodes;
  std::vector<std::string> changed_instances;
  // Persisted; its alert_history is also what the webhook notifier sends once durable.
  MonitoringChanges monitoring_changes;

  // Persisted: metering's transfers and usage records in packed form (above), interleaved with
  // `transfers` and `usage` by position. Their strings are copied into packed_text, so that the
  // committer thread reads nothing of the controller's.
  std::vector<UsageCharge> usage_charges;
  std::vector<MeteredUsage> metered_usage;
  std::string packed_text;
  void add_usage_charge(const model::UsageRecord& usage, Micros amount);
  void add_metered_usage(const model::UsageRecord& usage);
  std::string_view instance_id(const UsageCharge& charge) const;
  std::string_view tenant_id(const UsageCharge& charge) const;
  std::string_view usage_id(const MeteredUsage& row) const;
  // A packed charge as the transfer it stands for (for readers other than the store).
  model::Transfer transfer(const UsageCharge& charge) const;
  // Calls fn(const model::Transfer&) -> Status for every transfer, packed ones unpacked, in the
  // order they were posted; stops at the first error and returns it.
  template <class Fn>
  Status for_each_transfer(Fn fn) const {
    auto charge = usage_charges.begin();
    for (size_t i = 0; i <= transfers.size(); ++i) {
      for (; charge != usage_charges.end() && charge->position <= i; ++charge) {
        GPURENT_CHECK(fn(transfer(*charge)));
      }
      if (i < transfers.size()) GPURENT_CHECK(fn(transfers[i]));
    }
    return {};
  }
  // Every transfer, packed ones unpacked, in the order they were posted.
  std::vector<model::Transfer> all_transfers() const;

  bool empty() const {
    return tenants.empty() && api_keys.empty() && join_tokens.empty() && nodes.empty() &&
           instances.empty() && instance_rows.empty() && jobs.empty() && job_tasks.empty() &&
           reservations.empty() && quotas.empty() && template_changes.empty() && usage.empty() &&
           volumes.empty() && idempotency.empty() && transfers.empty() && events.empty() &&
           audit.empty() && price_versions.empty() && spot_prices.empty() &&
           package_products.empty() && packages.empty() && balance_settings.empty() &&
           downtime.empty() && gpu_quarantines.empty() && gpu_benchmarks.empty() &&
           woken_nodes.empty() && changed_instances.empty() && monitoring_changes.empty() &&
           usage_charges.empty() && metered_usage.empty();
  }
  // Appends another batch's changes (group commit merges consecutive batches).
  void merge(ChangeSet&& other);
};

}  // namespace gpurent::controller
