// PostgreSQL backend of the Store: the production store, shared by a leader and its standbys.
//
// The rows are store/rows.h's; this file is their SQL. Objects carry a `seq` identity column so
// that they read back in the order they were first inserted (an upsert leaves it). A commit's
// rows go through a pipeline (connection.h): one round trip for many rows.
#include <fmt/format.h>

#include <array>
#include <charconv>
#include <chrono>
#include <limits>
#include <string>

#include "store/postgres/connection.h"
#include "store/postgres/schema.h"
#include "store/rows.h"
#include "store/store.h"

namespace gpurent::store {
namespace {

using pg::Connection;

constexpr std::chrono::milliseconds kFencedIdleTimeout{5'000};
using pg::Params;
using pg::Pipeline;

int64_t to_int64(const char* text) {
  int64_t value = 0;
  std::from_chars(text, text + std::strlen(text), value);
  return value;
}

// The prepared statements' names of each object table, formatted once (the writer names one per
// row: a billing tick writes one per running workload).
using TableNames = std::array<std::string, kObjectTableCount>;
TableNames statement_names(std::string_view verb) {
  TableNames names;
  for (size_t i = 0; i < kObjectTableCount; ++i) {
    names[i] = fmt::format("{}_{}", verb, table_name(static_cast<ObjectTable>(i)));
  }
  return names;
}
const std::string& upsert_name(ObjectTable table) {
  static const TableNames names = statement_names("upsert");
  return names[static_cast<size_t>(table)];
}
const std::string& remove_name(ObjectTable table) {
  static const TableNames names = statement_names("remove");
  return names[static_cast<size_t>(table)];
}

// Every statement the writer sends, prepared once per connection.
Status prepare_statements(Connection& c) {
  for (size_t i = 0; i < kObjectTableCount; ++i) {
    const auto table = static_cast<ObjectTable>(i);
    GPURENT_CHECK(c.prepare(upsert_name(table),
                            fmt::format("INSERT INTO {} (id, tenant_id, body) VALUES ($1,$2,$3) "
                                        "ON CONFLICT (id) DO UPDATE SET "
                                        "tenant_id = EXCLUDED.tenant_id, body = EXCLUDED.body",
                                        table_name(table))));
    GPURENT_CHECK(c.prepare(remove_name(table),
                            fmt::format("DELETE FROM {} WHERE id = $1", table_name(table))));
  }
  std::string fields;
  const controller::MeteredUsage sample;
  int index = 2;
  for (const auto& field : metered_fields(sample)) {
    fields += fmt::format(", '{}', ${}::bigint", field.name, index++);
  }
  const std::array<std::pair<const char*, std::string>, 14> statements = {{
      {"upsert_task",
       "INSERT INTO job_tasks (job_id, idx, state, attempts, exit_code, members) "
       "VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT (job_id, idx) DO UPDATE SET "
       "state = EXCLUDED.state, attempts = EXCLUDED.attempts, exit_code = EXCLUDED.exit_code"},
      {"update_usage",
       fmt::format("UPDATE usage_records SET body = (body::jsonb || jsonb_build_object({}))::text "
                   "WHERE id = $1",
                   fields.substr(2))},
      {"append_transfer",
       "INSERT INTO ledger_transfers (id, at_ms, from_account, to_account, amount_micros, kind, "
       "tenant_id, reference) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)"},
      {"append_event",
       "INSERT INTO events (seq, at_ms, tenant_id, object_id, kind, message) "
       "VALUES ($1,$2,$3,$4,$5,$6)"},
      {"put_spot_price",
       "INSERT INTO spot_prices (gpu_type, at_ms, body) VALUES ($1,$2,$3) "
       "ON CONFLICT (gpu_type, at_ms) DO UPDATE SET body = EXCLUDED.body"},
      {"prune_spot_prices",
       "DELETE FROM spot_prices WHERE gpu_type = $1 AND at_ms < (SELECT at_ms FROM spot_prices "
       "WHERE gpu_type = $1 ORDER BY at_ms DESC LIMIT 1 OFFSET $2::int - 1)"},
      {"put_rollup",
       "INSERT INTO gpu_rollups (resolution, bucket_start_ms, gpu_uuid, metric, min, max, sum, "
       "count) VALUES ($1,$2,$3,$4,$5,$6,$7,$8) ON CONFLICT (resolution, bucket_start_ms, "
       "gpu_uuid, metric) DO UPDATE SET min = EXCLUDED.min, max = EXCLUDED.max, "
       "sum = EXCLUDED.sum, count = EXCLUDED.count"},
      {"prune_rollups", "DELETE FROM gpu_rollups WHERE resolution = $1 AND bucket_start_ms < $2"},
      {"put_alert_rule",
       "INSERT INTO alert_rules (name, body) VALUES ($1,$2) ON CONFLICT (name) DO UPDATE SET "
       "body = EXCLUDED.body"},
      {"remove_alert_rule", "DELETE FROM alert_rules WHERE name = $1"},
      {"append_alert", "INSERT INTO alert_history (seq, body) VALUES ($1,$2)"},
      {"append_audit", "INSERT INTO audit_log (seq, at_ms, tenant_id, body) VALUES ($1,$2,$3,$4)"},
      {"trim_alerts", "DELETE FROM alert_history WHERE seq <= $1"},
      {"rewrite_alert", "UPDATE alert_history SET body = $2 WHERE seq = $1"},
  }};
  for (const auto& [name, sql] : statements) GPURENT_CHECK(c.prepare(name, sql));
  return {};
}

// store/rows.h's rows in PostgreSQL's SQL. Writes go into one pipeline, ended by finish().
class PgRows final : public RowWriter, public RowReader {
 public:
  explicit PgRows(Connection& connection) : connection_(connection), pipeline_(connection) {}

  Status finish() { return pipeline_.finish(); }

  Status upsert(ObjectTable table, std::string_view id, std::string_view tenant_id,
                std::string_view body) override {
    return pipeline_.send(upsert_name(table), Params(id, tenant_id, body));
  }
  Status remove(ObjectTable table, std::string_view id) override {
    return pipeline_.send(remove_name(table), Params(id));
  }
  Status upsert_task(std::string_view job_id, const model::JobTask& task,
                     std::string_view members_json) override {
    return pipeline_.send("upsert_task", Params(job_id, task.index, model::to_string(task.state),
                                                task.attempts, task.exit_code, members_json));
  }
  Status update_metered_usage(std::string_view id,
                              const std::array<MeteredField, 8>& fields) override {
    Params params(id);
    for (const auto& field : fields) params.add(field.value);
    return pipeline_.send("update_usage", params, 1,
                          fmt::format("usage record {} was metered before it was stored", id));
  }
  Status append_transfer(const model::Transfer& t) override {
    return pipeline_.send("append_transfer",
                          Params(t.id, to_unix_ms(t.at), t.from_account, t.to_account, t.amount,
                                 model::to_string(t.kind), t.tenant_id, t.reference));
  }
  Status append_event(const model::Event& e) override {
    return pipeline_.send("append_event", Params(e.seq, to_unix_ms(e.at), e.tenant_id, e.object_id,
                                                 e.kind, e.message));
  }
  Status put_spot_price(std::string_view gpu_type, int64_t at_ms, std::string_view body) override {
    return pipeline_.send("put_spot_price", Params(gpu_type, at_ms, body));
  }
  Status prune_spot_prices(std::string_view gpu_type, int keep) override {
    return pipeline_.send("prune_spot_prices", Params(gpu_type, keep));
  }
  Status put_rollup(const monitor::RollupRow& row) override {
    return pipeline_.send(
        "put_rollup",
        Params(monitor::to_string(row.resolution), row.bucket_start_ms, row.gpu_uuid,
               monitor::metric_info(row.metric).name, row.min, row.max, row.sum, row.count));
  }
  Status prune_rollups(monitor::Resolution resolution, int64_t before_ms) override {
    return pipeline_.send("prune_rollups", Params(monitor::to_string(resolution), before_ms));
  }
  Status put_alert_rule(std::string_view name, std::string_view body) override {
    return pipeline_.send("put_alert_rule", Params(name, body));
  }
  Status remove_alert_rule(std::string_view name) override {
    return pipeline_.send("remove_alert_rule", Params(name));
  }
  Status append_audit(int64_t seq, int64_t at_ms, std::string_view tenant_id,
                      std::string_view body) override {
    return pipeline_.send("append_audit", Params(seq, at_ms, tenant_id, body));
  }
  Status append_alert(int64_t seq, std::string_view body) override {
    return pipeline_.send("append_alert", Params(seq, body));
  }
  Status trim_alerts(int64_t up_to_seq) override {
    return pipeline_.send("trim_alerts", Params(up_to_seq));
  }
  Status rewrite_alert(int64_t seq, std::string_view body) override {
    return pipeline_.send("rewrite_alert", Params(seq, body));
  }

  Status objects(ObjectTable table,
                 const RowFn<std::string_view, std::string_view, std::string_view>& row) override {
    return each(fmt::format("SELECT id, tenant_id, body FROM {} ORDER BY seq", table_name(table)),
                [&](const Cells& c) { return row(c.text(0), c.text(1), c.text(2)); });
  }
  Status tasks(const RowFn<const TaskColumns&>& row) override {
    return each(
        "SELECT job_id, idx, state, attempts, exit_code, members FROM job_tasks "
        "ORDER BY job_id COLLATE \"C\", idx",
        [&](const Cells& c) {
          return row({.job_id = c.text(0),
                      .index = static_cast<int>(c.integer(1)),
                      .state = c.text(2),
                      .attempts = static_cast<int>(c.integer(3)),
                      .exit_code = c.null(4) ? std::nullopt
                                             : std::optional<int>(static_cast<int>(c.integer(4))),
                      .members = c.text(5)});
        });
  }
  Status transfers(const RowFn<const TransferColumns&>& row) override {
    return each(
        "SELECT id, at_ms, from_account, to_account, amount_micros, kind, tenant_id, reference "
        "FROM ledger_transfers ORDER BY seq",
        [&](const Cells& c) {
          return row({.id = c.text(0),
                      .at_ms = c.integer(1),
                      .from_account = c.text(2),
                      .to_account = c.text(3),
                      .amount = c.integer(4),
                      .kind = c.text(5),
                      .tenant_id = c.text(6),
                      .reference = c.text(7)});
        });
  }
  Status events(size_t limit, const RowFn<model::Event>& row) override {
    return each(fmt::format("SELECT seq, at_ms, tenant_id, object_id, kind, message FROM "
                            "(SELECT * FROM events ORDER BY seq DESC LIMIT {}) AS newest "
                            "ORDER BY seq",
                            std::min<size_t>(limit, std::numeric_limits<int64_t>::max())),
                [&](const Cells& c) {
                  return row({.seq = c.integer(0),
                              .at = from_unix_ms(c.integer(1)),
                              .tenant_id = std::string(c.text(2)),
                              .object_id = std::string(c.text(3)),
                              .kind = std::string(c.text(4)),
                              .message = std::string(c.text(5))});
                });
  }
  Status audit(size_t limit,
               const RowFn<int64_t, int64_t, std::string_view, std::string_view>& row) override {
    return each(
        fmt::format("SELECT seq, at_ms, tenant_id, body FROM "
                    "(SELECT * FROM audit_log ORDER BY seq DESC LIMIT {}) AS newest "
                    "ORDER BY seq",
                    std::min<size_t>(limit, std::numeric_limits<int64_t>::max())),
        [&](const Cells& c) { return row(c.integer(0), c.integer(1), c.text(2), c.text(3)); });
  }
  Status spot_prices(const RowFn<std::string_view, int64_t, std::string_view>& row) override {
    return each(
        "SELECT gpu_type, at_ms, body FROM spot_prices ORDER BY gpu_type COLLATE \"C\", at_ms",
        [&](const Cells& c) { return row(c.text(0), c.integer(1), c.text(2)); });
  }
  Status rollups(const RowFn<const RollupColumns&>& row) override {
    return each(
        "SELECT resolution, bucket_start_ms, gpu_uuid, metric, min, max, sum, count "
        "FROM gpu_rollups",
        [&](const Cells& c) {
          return row({.resolution = c.text(0),
                      .bucket_start_ms = c.integer(1),
                      .gpu_uuid = c.text(2),
                      .metric = c.text(3),
                      .min = c.real(4),
                      .max = c.real(5),
                      .sum = c.real(6),
                      .count = c.integer(7)});
        });
  }
  Status alert_rules(const RowFn<std::string_view, std::string_view>& row) override {
    return each("SELECT name, body FROM alert_rules ORDER BY name COLLATE \"C\"",
                [&](const Cells& c) { return row(c.text(0), c.text(1)); });
  }
  Status alert_history(const RowFn<int64_t, std::string_view>& row) override {
    return each("SELECT seq, body FROM alert_history ORDER BY seq",
                [&](const Cells& c) { return row(c.integer(0), c.text(1)); });
  }

 private:
  // One row of a result, in text form.
  struct Cells {
    const PGresult* result;
    int row;
    std::string_view text(int column) const {
      return {PQgetvalue(result, row, column),
              static_cast<size_t>(PQgetlength(result, row, column))};
    }
    int64_t integer(int column) const { return to_int64(PQgetvalue(result, row, column)); }
    double real(int column) const { return std::strtod(PQgetvalue(result, row, column), nullptr); }
    bool null(int column) const { return PQgetisnull(result, row, column) != 0; }
  };

  template <class OnRow>
  Status each(const std::string& sql, OnRow on_row) {
    GPURENT_TRY(result, connection_.query(sql));
    const int rows = PQntuples(result.get());
    for (int i = 0; i < rows; ++i) GPURENT_CHECK(on_row(Cells{result.get(), i}));
    return {};
  }

  Connection& connection_;
  Pipeline pipeline_;
};

class PostgresStore final : public Store {
 public:
  PostgresStore(Connection connection, std::optional<int64_t> fence)
      : connection_(std::move(connection)), fence_(fence) {}

  Result<controller::Snapshot> load() override {
    GPURENT_CHECK(connection_.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
    PgRows rows(connection_);
    auto snapshot = read_snapshot(rows);
    (void)connection_.exec("COMMIT");
    return snapshot;
  }

  Status read_rows(const std::function<Status(RowReader&)>& read) override {
    GPURENT_CHECK(connection_.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
    PgRows rows(connection_);
    auto outcome = read(rows);
    (void)connection_.exec("COMMIT");
    return outcome;
  }

  Status write_rows(const std::function<Status(RowWriter&)>& write) override {
    GPURENT_CHECK(connection_.exec("BEGIN"));
    PgRows rows(connection_);
    auto written = write(rows);
    if (auto finished = rows.finish(); written) written = std::move(finished);
    if (written) written = end_transaction();
    if (!written) (void)connection_.exec("ROLLBACK");
    return written;
  }

  Status commit(const controller::ChangeSet& changes) override {
    GPURENT_CHECK(stage(changes));
    auto committed = end_transaction();
    if (!committed) (void)connection_.exec("ROLLBACK");
    return committed;
  }

  Status stage(const controller::ChangeSet& changes) override {
    if (!connection_.in_transaction()) GPURENT_CHECK(connection_.exec("BEGIN"));
    PgRows rows(connection_);
    auto written = write_changes(changes, rows);
    if (auto finished = rows.finish(); written) written = std::move(finished);
    if (!written) (void)connection_.exec("ROLLBACK");
    return written;
  }

 private:
  // The fence (schema.h) takes the lease row's lock until COMMIT: a leader that takes over
  // waits for this commit, or this commit sees its later epoch and fails.
  Status end_transaction() {
    if (fence_) {
      auto fenced = connection_.query_prepared("fence", Params(*fence_));
      if (!fenced && fenced.error().code == fmt::format("sqlstate_{}", pg::kFencedSqlState)) {
        return fail(Error{ErrorKind::kUnavailable, "fenced", fenced.error().message});
      }
      if (!fenced) return fail(std::move(fenced.error()));
    }
    return connection_.exec("COMMIT");
  }

  Connection connection_;
  std::optional<int64_t> fence_;
};

class PgRollupWriter final : public RollupWriter {
 public:
  explicit PgRollupWriter(Connection connection) : connection_(std::move(connection)) {}

  Status write(std::span<const monitor::RollupRow> rows) override {
    if (rows.empty()) return {};
    GPURENT_CHECK(connection_.exec("BEGIN"));
    PgRows writer(connection_);
    Status written;
    for (const auto& row : rows) {
      written = writer.put_rollup(row);
      if (!written) break;
    }
    if (auto finished = writer.finish(); written) written = std::move(finished);
    if (written) written = connection_.exec("COMMIT");
    if (!written) (void)connection_.exec("ROLLBACK");
    return written;
  }

 private:
  Connection connection_;
};

// A connection with the schema migrated and the writer's statements prepared. Rollups are
// derived data (store.h): their commits need not wait for the disk.
Result<Connection> open_connection(const std::string& url, bool durable) {
  GPURENT_TRY(connection, Connection::open(url));
  GPURENT_CHECK(pg::migrate(connection));
  if (!durable) GPURENT_CHECK(connection.exec("SET synchronous_commit = off"));
  GPURENT_CHECK(prepare_statements(connection));
  return connection;
}

}  // namespace

bool is_postgres_url(std::string_view url) {
  return url.starts_with("postgres://") || url.starts_with("postgresql://");
}

Result<std::unique_ptr<Store>> open_postgres_store(const std::string& url,
                                                   std::optional<int64_t> fence) {
  GPURENT_TRY(connection, open_connection(url, true));
  if (fence) {
    GPURENT_CHECK(pg::prepare_fence(connection));
    // A leader paused inside a transaction (between its fence and its COMMIT) holds the lease
    // row's lock; the database ends that session, so the takeover waits no longer than this.
    GPURENT_CHECK(connection.exec(
        fmt::format("SET idle_in_transaction_session_timeout = {}", kFencedIdleTimeout.count())));
  }
  return std::unique_ptr<Store>(std::make_unique<PostgresStore>(std::move(connection), fence));
}

Result<std::string> postgres_shared_secret(const std::string& url, std::string_view name,
                                           std::string_view candidate) {
  GPURENT_TRY(connection, Connection::open(url));
  GPURENT_CHECK(pg::migrate(connection));
  GPURENT_TRY(stored, connection.query("INSERT INTO server_secrets (name, value) VALUES ($1, $2) "
                                       "ON CONFLICT (name) DO NOTHING",
                                       Params(name, candidate)));
  (void)stored;
  GPURENT_TRY(read,
              connection.query("SELECT value FROM server_secrets WHERE name = $1", Params(name)));
  if (PQntuples(read.get()) != 1) {
    return fail(Error::internal(fmt::format("the shared secret {} was not stored", name)));
  }
  return std::string(PQgetvalue(read.get(), 0, 0));
}

Status postgres_replace_shared_secret(const std::string& url, std::string_view name,
                                      std::string_view expected, std::string_view replacement) {
  GPURENT_TRY(connection, Connection::open(url));
  GPURENT_TRY(updated, connection.query("UPDATE server_secrets SET value = $3 "
                                        "WHERE name = $1 AND value = $2",
                                        Params(name, expected, replacement)));
  (void)updated;
  return {};
}

Result<std::unique_ptr<RollupWriter>> open_postgres_rollup_writer(const std::string& url) {
  GPURENT_TRY(connection, open_connection(url, false));
  return std::unique_ptr<RollupWriter>(std::make_unique<PgRollupWriter>(std::move(connection)));
}

}  // namespace gpurent::store
