// The store's rows, whichever database holds them: how a ChangeSet becomes the writes of one
// transaction, and how the rows read back become a Snapshot. A backend (sqlite/, postgres/)
// implements RowWriter and RowReader in its own SQL; which rows a change writes, in what order,
// and how a row's body encodes an object are decided here, once, so that the backends cannot
// disagree (store_test.cc runs one conformance suite on both).
//
// The tables:
// - objects (ObjectTable): (id, tenant_id, body JSON), upserted whole by id, read back in the
//   order they were first inserted. The controller holds the state in memory and reads it back
//   whole at start, so no per-field queries are needed, and a new field needs no migration.
// - job_tasks: (job_id, idx, state, attempts, exit_code, members), one row per task, so that a
//   task of a large array changing does not rewrite the array (a job's body has "tasks": []).
//   A job member's instance row leaves out what its job determines (model::instance_row_json),
//   so instances are read after jobs.
// - usage_records are objects, but metering updates its fields of a stored body in place
//   (update_metered_usage): a packed row for a record the store lacks fails the commit.
// - ledger_transfers: real columns, append-only, a UNIQUE id (a repeated charge fails the whole
//   commit) and a positive amount. Money never goes into JSON.
// - events: append-only by seq; spot_prices: (gpu_type, at_ms, body), the newest
//   billing::kMaxSpotPointsPerType per type kept.
// - gpu_rollups: (resolution, bucket start, GPU, metric) -> min, max, sum, count; upserted (a
//   bucket rebuilt after a restart replaces its row), pruned past retention by range.
// - gpu_benchmarks: objects keyed by GPU UUID, each GPU's benchmark history (model/benchmark.h).
// - alert_rules: (name, body); alert_history: (seq, body: the transition, plus acknowledged_by
//   and acknowledged_at_ms once acknowledged), the newest controller::kMaxAlertHistory kept.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string_view>

#include "common/result.h"
#include "controller/change_set.h"

namespace gpurent::store {

enum class ObjectTable {
  kTenants,
  kApiKeys,
  kJoinTokens,
  kNodes,
  kInstances,
  kJobs,
  kReservations,
  kQuotas,
  kTemplates,
  kUsageRecords,
  kVolumes,
  kIdempotencyKeys,
  kPriceVersions,
  kPackageProducts,
  kPackages,
  kBalanceSettings,
  kDowntime,
  kGpuQuarantines,
  kGpuBenchmarks,
};
inline constexpr size_t kObjectTableCount = 19;
std::string_view table_name(ObjectTable table);

// Metering's fields of a usage record's body, as update_metered_usage sets them: the names are
// the codec's (model/codec.cc), and the conformance suite holds the two together.
struct MeteredField {
  std::string_view name;
  int64_t value = 0;
};
std::array<MeteredField, 8> metered_fields(const controller::MeteredUsage& row);

// One transaction's writes. Each call writes one row (or one range of rows); a backend may send
// them ahead and report an error later, as long as any error fails the whole transaction.
class RowWriter {
 public:
  virtual ~RowWriter() = default;
  virtual Status upsert(ObjectTable table, std::string_view id, std::string_view tenant_id,
                        std::string_view body) = 0;
  virtual Status remove(ObjectTable table, std::string_view id) = 0;
  // A task's members are fixed when its job is created: an update leaves them.
  virtual Status upsert_task(std::string_view job_id, const model::JobTask& task,
                             std::string_view members_json) = 0;
  // Sets metering_fields(row) in the stored body of record `id`; none stored is an error.
  virtual Status update_metered_usage(std::string_view id,
                                      const std::array<MeteredField, 8>& fields) = 0;
  virtual Status append_transfer(const model::Transfer& transfer) = 0;
  virtual Status append_event(const model::Event& event) = 0;
  // An audit entry: (seq, at_ms, tenant_id) as columns, the whole entry as its JSON body.
  virtual Status append_audit(int64_t seq, int64_t at_ms, std::string_view tenant_id,
                              std::string_view body) = 0;
  virtual Status put_spot_price(std::string_view gpu_type, int64_t at_ms,
                                std::string_view body) = 0;
  // Deletes every point of the type older than its newest `keep`.
  virtual Status prune_spot_prices(std::string_view gpu_type, int keep) = 0;
  virtual Status put_rollup(const monitor::RollupRow& row) = 0;
  virtual Status prune_rollups(monitor::Resolution resolution, int64_t before_ms) = 0;
  virtual Status put_alert_rule(std::string_view name, std::string_view body) = 0;
  virtual Status remove_alert_rule(std::string_view name) = 0;
  virtual Status append_alert(int64_t seq, std::string_view body) = 0;
  virtual Status trim_alerts(int64_t up_to_seq) = 0;  // deletes seq <= up_to_seq
  virtual Status rewrite_alert(int64_t seq, std::string_view body) = 0;
};

// Writes every row of `changes` through `writer`, in the order the controller made them.
Status write_changes(const controller::ChangeSet& changes, RowWriter& writer);

// A row of job_tasks, and of ledger_transfers, as read.
struct TaskColumns {
  std::string_view job_id;
  int index = 0;
  std::string_view state;
  int attempts = 0;
  std::optional<int> exit_code;
  std::string_view members;
};
struct TransferColumns {
  std::string_view id;
  int64_t at_ms = 0;
  std::string_view from_account;
  std::string_view to_account;
  int64_t amount = 0;
  std::string_view kind;
  std::string_view tenant_id;
  std::string_view reference;
};
struct RollupColumns {
  std::string_view resolution;
  int64_t bucket_start_ms = 0;
  std::string_view gpu_uuid;
  std::string_view metric;
  double min = 0;
  double max = 0;
  double sum = 0;
  int64_t count = 0;
};

// Reads whole tables, calling `row` for each row in the order stated; a backend reads them all
// from one consistent view of the database. An error `row` returns stops the read and is
// returned.
template <class... Columns>
using RowFn = std::function<Status(Columns...)>;
class RowReader {
 public:
  virtual ~RowReader() = default;
  // (id, tenant_id, body), in the order the rows were first inserted.
  virtual Status objects(
      ObjectTable table,
      const RowFn<std::string_view, std::string_view, std::string_view>& row) = 0;
  virtual Status tasks(const RowFn<const TaskColumns&>& row) = 0;          // by job_id, then idx
  virtual Status transfers(const RowFn<const TransferColumns&>& row) = 0;  // as appended
  // The newest `limit` events, oldest first.
  virtual Status events(size_t limit, const RowFn<model::Event>& row) = 0;
  // The newest `limit` audit entries, oldest first: (seq, at_ms, tenant_id, body).
  virtual Status audit(size_t limit,
                       const RowFn<int64_t, int64_t, std::string_view, std::string_view>& row) = 0;
  virtual Status spot_prices(  // by type, then time
      const RowFn<std::string_view, int64_t, std::string_view>& row) = 0;
  virtual Status rollups(const RowFn<const RollupColumns&>& row) = 0;
  virtual Status alert_rules(const RowFn<std::string_view, std::string_view>& row) = 0;  // by name
  virtual Status alert_history(const RowFn<int64_t, std::string_view>& row) = 0;         // by seq
};

Result<controller::Snapshot> read_snapshot(RowReader& reader);

// Writes every row `from` reads into `to`: the whole database, events and all, in each table's
// order (a migration between backends, or a backup).
Status copy_rows(RowReader& from, RowWriter& to);

}  // namespace gpurent::store
