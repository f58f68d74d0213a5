// SQLite backend of the Store: the embedded default, one database file in WAL mode.
//
// The rows are store/rows.h's; this file is their SQL. Objects keep SQLite's rowid, which an
// upsert (ON CONFLICT DO UPDATE) leaves alone, so reading by rowid is reading in the order
// objects were first inserted.
#include <sqlite3.h>

#include <array>
#include <chrono>
#include <limits>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "store/rows.h"
#include "store/sqlite/checkpointer.h"
#include "store/store.h"

namespace gpurent::store {
namespace {

const std::array<std::string, 13> kMigrations = {
    R"sql(
    CREATE TABLE tenants (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE api_keys (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE join_tokens (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE nodes (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE instances (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE usage_records (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE idempotency_keys (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE ledger_transfers (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      at_ms INTEGER NOT NULL,
      from_account TEXT NOT NULL,
      to_account TEXT NOT NULL,
      amount_micros INTEGER NOT NULL CHECK (amount_micros > 0),
      kind TEXT NOT NULL,
      tenant_id TEXT NOT NULL,
      reference TEXT NOT NULL,
      CHECK (from_account <> to_account)
    );
    CREATE INDEX ledger_transfers_tenant ON ledger_transfers (tenant_id, seq);
    )sql",
    R"sql(
    CREATE TABLE jobs (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE reservations (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE quotas (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    )sql",
    // Tasks move out of the job's body into rows of their own.
    R"sql(
    CREATE TABLE job_tasks (
      job_id TEXT NOT NULL,
      idx INTEGER NOT NULL CHECK (idx >= 0),
      state TEXT NOT NULL,
      attempts INTEGER NOT NULL,
      exit_code INTEGER,
      members TEXT NOT NULL,
      PRIMARY KEY (job_id, idx)
    ) WITHOUT ROWID;
    INSERT INTO job_tasks (job_id, idx, state, attempts, exit_code, members)
      SELECT jobs.id, json_extract(task.value, '$.index'), json_extract(task.value, '$.state'),
             json_extract(task.value, '$.attempts'), json_extract(task.value, '$.exit_code'),
             json_extract(task.value, '$.members')
      FROM jobs, json_each(jobs.body, '$.tasks') AS task;
    UPDATE jobs SET body = json_set(body, '$.tasks', json('[]'));
    )sql",
    // Operators' templates, keyed by name.
    R"sql(
    CREATE TABLE templates (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    )sql",
    // Persistent volumes (model/volume.h); deleted ones stay, with their billing state.
    R"sql(
    CREATE TABLE volumes (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    )sql",
    // The event log (model/event.h): append-only, in seq order.
    R"sql(
    CREATE TABLE events (
      seq INTEGER PRIMARY KEY CHECK (seq > 0),
      at_ms INTEGER NOT NULL,
      tenant_id TEXT NOT NULL,
      object_id TEXT NOT NULL,
      kind TEXT NOT NULL,
      message TEXT NOT NULL
    );
    CREATE INDEX events_object ON events (object_id, seq);
    )sql",
    // The price book's versions (append-only) and the spot market's points (the newest
    // billing::kMaxSpotPointsPerType per type are kept).
    R"sql(
    CREATE TABLE price_versions (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE spot_prices (
      gpu_type TEXT NOT NULL,
      at_ms INTEGER NOT NULL,
      body TEXT NOT NULL,
      PRIMARY KEY (gpu_type, at_ms)
    ) WITHOUT ROWID;
    )sql",
    // Accounts (model/accounts.h): operators' package products (keyed by name), tenants'
    // packages, per-tenant balance settings (keyed by tenant), and instances' platform-caused
    // downtime (SLA).
    R"sql(
    CREATE TABLE package_products (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE packages (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE balance_settings (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE downtime (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    )sql",
    // GPU rollups, alert rules and alert history (store/rows.h).
    R"sql(
    CREATE TABLE gpu_rollups (
      resolution TEXT NOT NULL,
      bucket_start_ms INTEGER NOT NULL,
      gpu_uuid TEXT NOT NULL,
      metric TEXT NOT NULL,
      min REAL NOT NULL,
      max REAL NOT NULL,
      sum REAL NOT NULL,
      count INTEGER NOT NULL CHECK (count > 0),
      PRIMARY KEY (resolution, bucket_start_ms, gpu_uuid, metric)
    ) WITHOUT ROWID;
    CREATE TABLE alert_rules (name TEXT PRIMARY KEY, body TEXT NOT NULL);
    CREATE TABLE alert_history (seq INTEGER PRIMARY KEY CHECK (seq > 0), body TEXT NOT NULL);
    )sql",
    // Quarantined GPUs (model/gpu_quarantine.h), keyed by GPU UUID; released ones stay.
    R"sql(
    CREATE TABLE gpu_quarantines (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    )sql",
    // A job member's instance row leaves out what its job determines (model::instance_row_json).
    // No table changes and older rows stay readable, but a binary from before could not read the
    // new rows: the version tells it so (see migrate()) instead of a "corrupt record".
    R"sql(
    SELECT 1;
    )sql",
    // The audit log (model/audit.h): append-only, in seq order; the entry's JSON as its body.
    R"sql(
    CREATE TABLE IF NOT EXISTS audit_log (
      seq INTEGER PRIMARY KEY CHECK (seq > 0),
      at_ms INTEGER NOT NULL,
      tenant_id TEXT NOT NULL,
      body TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS audit_log_tenant ON audit_log (tenant_id, seq);
    )sql",
    // Each GPU's benchmark history (model/benchmark.h), keyed by GPU UUID.
    R"sql(
    CREATE TABLE IF NOT EXISTS gpu_benchmarks (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
    )sql",
};

struct Finalize {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, Finalize>;

Error db_error(sqlite3* db, std::string_view what) {
  return Error::internal(fmt::format("sqlite: {}: {}", what, sqlite3_errmsg(db)));
}

Status exec(sqlite3* db, const std::string& sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    Error error = Error::internal(fmt::format("sqlite: {}", message ? message : "unknown error"));
    sqlite3_free(message);
    return fail(std::move(error));
  }
  return {};
}

// Binds each argument in turn (from index 1): text, integers, doubles, or std::nullopt for NULL.
// The text is copied (SQLITE_TRANSIENT): callers bind temporaries.
class Binder {
 public:
  explicit Binder(sqlite3_stmt* stmt) : stmt_(stmt) {}
  void add(std::string_view text) {
    // A null pointer would bind NULL: an empty view of nothing is still the empty text.
    sqlite3_bind_text(stmt_, ++index_, text.data() ? text.data() : "",
                      static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void add(int64_t value) { sqlite3_bind_int64(stmt_, ++index_, value); }
  void add(int value) { sqlite3_bind_int64(stmt_, ++index_, value); }
  void add(double value) { sqlite3_bind_double(stmt_, ++index_, value); }
  void add(std::optional<int> value) {
    if (value) {
      add(*value);
    } else {
      sqlite3_bind_null(stmt_, ++index_);
    }
  }

 private:
  sqlite3_stmt* stmt_;
  int index_ = 0;
};

std::string_view column_text(sqlite3_stmt* stmt, int column) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
  return p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(stmt, column)))
           : std::string_view();
}

// store/rows.h's rows in SQLite's SQL, on one connection. Statements are prepared the first time
// they are used and kept for the connection's life.
class SqliteRows final : public RowWriter, public RowReader {
 public:
  explicit SqliteRows(sqlite3* db) : db_(db) {}

  Status upsert(ObjectTable table, std::string_view id, std::string_view tenant_id,
                std::string_view body) override {
    return run(
        upserts_[static_cast<size_t>(table)],
        [&] {
          return fmt::format(
              "INSERT INTO {} (id, tenant_id, body) VALUES (?,?,?) ON CONFLICT(id) DO "
              "UPDATE SET tenant_id=excluded.tenant_id, body=excluded.body",
              table_name(table));
        },
        id, tenant_id, body);
  }

  Status remove(ObjectTable table, std::string_view id) override {
    return run(
        removes_[static_cast<size_t>(table)],
        [&] { return fmt::format("DELETE FROM {} WHERE id = ?", table_name(table)); }, id);
  }

  Status upsert_task(std::string_view job_id, const model::JobTask& task,
                     std::string_view members_json) override {
    return run(
        upsert_task_,
        [] {
          return std::string(
              "INSERT INTO job_tasks (job_id, idx, state, attempts, exit_code, members) "
              "VALUES (?,?,?,?,?,?) ON CONFLICT(job_id, idx) DO UPDATE SET "
              "state=excluded.state, attempts=excluded.attempts, exit_code=excluded.exit_code");
        },
        job_id, task.index, model::to_string(task.state), task.attempts, task.exit_code,
        members_json);
  }

  Status update_metered_usage(std::string_view id,
                              const std::array<MeteredField, 8>& fields) override {
    const auto sql = [&fields] {
      std::string paths;
      for (size_t i = 0; i < fields.size(); ++i) {
        paths += fmt::format(", '$.{}', ?{}", fields[i].name, i + 2);
      }
      return fmt::format("UPDATE usage_records SET body = json_set(body{}) WHERE id = ?1", paths);
    };
    const auto& [f0, f1, f2, f3, f4, f5, f6, f7] = fields;
    GPURENT_CHECK(run(update_usage_, sql, id, f0.value, f1.value, f2.value, f3.value, f4.value,
                      f5.value, f6.value, f7.value));
    if (sqlite3_changes(db_) != 1) {
      return fail(
          Error::internal(fmt::format("usage record {} was metered before it was stored", id)));
    }
    return {};
  }

  Status append_transfer(const model::Transfer& t) override {
    return run(
        append_transfer_,
        [] {
          return std::string(
              "INSERT INTO ledger_transfers (id, at_ms, from_account, to_account, "
              "amount_micros, kind, tenant_id, reference) VALUES (?,?,?,?,?,?,?,?)");
        },
        t.id, to_unix_ms(t.at), t.from_account, t.to_account, t.amount, model::to_string(t.kind),
        t.tenant_id, t.reference);
  }

  Status append_event(const model::Event& e) override {
    return run(
        append_event_,
        [] {
          return std::string(
              "INSERT INTO events (seq, at_ms, tenant_id, object_id, kind, message) "
              "VALUES (?,?,?,?,?,?)");
        },
        e.seq, to_unix_ms(e.at), e.tenant_id, e.object_id, e.kind, e.message);
  }

  Status append_audit(int64_t seq, int64_t at_ms, std::string_view tenant_id,
                      std::string_view body) override {
    return run(
        append_audit_,
        [] {
          return std::string(
              "INSERT INTO audit_log (seq, at_ms, tenant_id, body) VALUES (?,?,?,?)");
        },
        seq, at_ms, tenant_id, body);
  }

  Status put_spot_price(std::string_view gpu_type, int64_t at_ms, std::string_view body) override {
    return run(
        put_spot_price_,
        [] {
          return std::string(
              "INSERT OR REPLACE INTO spot_prices (gpu_type, at_ms, body) VALUES (?,?,?)");
        },
        gpu_type, at_ms, body);
  }

  Status prune_spot_prices(std::string_view gpu_type, int keep) override {
    return run(
        prune_spot_prices_,
        [] {
          return std::string(
              "DELETE FROM spot_prices WHERE gpu_type = ?1 AND at_ms < (SELECT at_ms FROM "
              "spot_prices WHERE gpu_type = ?1 ORDER BY at_ms DESC LIMIT 1 OFFSET ?2 - 1)");
        },
        gpu_type, keep);
  }

  Status put_rollup(const monitor::RollupRow& row) override {
    return run(
        put_rollup_,
        [] {
          return std::string(
              "INSERT OR REPLACE INTO gpu_rollups (resolution, bucket_start_ms, gpu_uuid, metric, "
              "min, max, sum, count) VALUES (?,?,?,?,?,?,?,?)");
        },
        monitor::to_string(row.resolution), row.bucket_start_ms, row.gpu_uuid,
        monitor::metric_info(row.metric).name, row.min, row.max, row.sum, row.count);
  }

  Status prune_rollups(monitor::Resolution resolution, int64_t before_ms) override {
    return run(
        prune_rollups_,
        [] {
          return std::string(
              "DELETE FROM gpu_rollups WHERE resolution = ? AND bucket_start_ms < ?");
        },
        monitor::to_string(resolution), before_ms);
  }

  Status put_alert_rule(std::string_view name, std::string_view body) override {
    return run(
        put_alert_rule_,
        [] { return std::string("INSERT OR REPLACE INTO alert_rules (name, body) VALUES (?,?)"); },
        name, body);
  }

  Status remove_alert_rule(std::string_view name) override {
    return run(
        remove_alert_rule_, [] { return std::string("DELETE FROM alert_rules WHERE name = ?"); },
        name);
  }

  Status append_alert(int64_t seq, std::string_view body) override {
    return run(
        append_alert_,
        [] { return std::string("INSERT INTO alert_history (seq, body) VALUES (?,?)"); }, seq,
        body);
  }

  Status trim_alerts(int64_t up_to_seq) override {
    return run(
        trim_alerts_, [] { return std::string("DELETE FROM alert_history WHERE seq <= ?"); },
        up_to_seq);
  }

  Status rewrite_alert(int64_t seq, std::string_view body) override {
    return run(
        rewrite_alert_,
        [] { return std::string("UPDATE alert_history SET body = ? WHERE seq = ?"); }, body, seq);
  }

  Status objects(ObjectTable table,
                 const RowFn<std::string_view, std::string_view, std::string_view>& row) override {
    return each(fmt::format("SELECT id, tenant_id, body FROM {} ORDER BY rowid", table_name(table)),
                [&](sqlite3_stmt* s) {
                  return row(column_text(s, 0), column_text(s, 1), column_text(s, 2));
                });
  }

  Status tasks(const RowFn<const TaskColumns&>& row) override {
    return each(
        "SELECT job_id, idx, state, attempts, exit_code, members FROM job_tasks "
        "ORDER BY job_id, idx",
        [&](sqlite3_stmt* s) {
          return row({.job_id = column_text(s, 0),
                      .index = sqlite3_column_int(s, 1),
                      .state = column_text(s, 2),
                      .attempts = sqlite3_column_int(s, 3),
                      .exit_code = sqlite3_column_type(s, 4) == SQLITE_NULL
                                       ? std::nullopt
                                       : std::optional<int>(sqlite3_column_int(s, 4)),
                      .members = column_text(s, 5)});
        });
  }

  Status transfers(const RowFn<const TransferColumns&>& row) override {
    return each(
        "SELECT id, at_ms, from_account, to_account, amount_micros, kind, tenant_id, reference "
        "FROM ledger_transfers ORDER BY seq",
        [&](sqlite3_stmt* s) {
          return row({.id = column_text(s, 0),
                      .at_ms = sqlite3_column_int64(s, 1),
                      .from_account = column_text(s, 2),
                      .to_account = column_text(s, 3),
                      .amount = sqlite3_column_int64(s, 4),
                      .kind = column_text(s, 5),
                      .tenant_id = column_text(s, 6),
                      .reference = column_text(s, 7)});
        });
  }

  Status events(size_t limit, const RowFn<model::Event>& row) override {
    return each(fmt::format("SELECT seq, at_ms, tenant_id, object_id, kind, message FROM "
                            "(SELECT * FROM events ORDER BY seq DESC LIMIT {}) ORDER BY seq",
                            std::min<size_t>(limit, std::numeric_limits<int64_t>::max())),
                [&](sqlite3_stmt* s) {
                  return row({.seq = sqlite3_column_int64(s, 0),
                              .at = from_unix_ms(sqlite3_column_int64(s, 1)),
                              .tenant_id = std::string(column_text(s, 2)),
                              .object_id = std::string(column_text(s, 3)),
                              .kind = std::string(column_text(s, 4)),
                              .message = std::string(column_text(s, 5))});
                });
  }

  Status audit(size_t limit,
               const RowFn<int64_t, int64_t, std::string_view, std::string_view>& row) override {
    return each(fmt::format("SELECT seq, at_ms, tenant_id, body FROM "
                            "(SELECT * FROM audit_log ORDER BY seq DESC LIMIT {}) ORDER BY seq",
                            std::min<size_t>(limit, std::numeric_limits<int64_t>::max())),
                [&](sqlite3_stmt* s) {
                  return row(sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                             column_text(s, 2), column_text(s, 3));
                });
  }

  Status spot_prices(const RowFn<std::string_view, int64_t, std::string_view>& row) override {
    return each("SELECT gpu_type, at_ms, body FROM spot_prices ORDER BY gpu_type, at_ms",
                [&](sqlite3_stmt* s) {
                  return row(column_text(s, 0), sqlite3_column_int64(s, 1), column_text(s, 2));
                });
  }

  Status rollups(const RowFn<const RollupColumns&>& row) override {
    return each(
        "SELECT resolution, bucket_start_ms, gpu_uuid, metric, min, max, sum, count "
        "FROM gpu_rollups",
        [&](sqlite3_stmt* s) {
          return row({.resolution = column_text(s, 0),
                      .bucket_start_ms = sqlite3_column_int64(s, 1),
                      .gpu_uuid = column_text(s, 2),
                      .metric = column_text(s, 3),
                      .min = sqlite3_column_double(s, 4),
                      .max = sqlite3_column_double(s, 5),
                      .sum = sqlite3_column_double(s, 6),
                      .count = sqlite3_column_int64(s, 7)});
        });
  }

  Status alert_rules(const RowFn<std::string_view, std::string_view>& row) override {
    return each("SELECT name, body FROM alert_rules ORDER BY name",
                [&](sqlite3_stmt* s) { return row(column_text(s, 0), column_text(s, 1)); });
  }

  Status alert_history(const RowFn<int64_t, std::string_view>& row) override {
    return each("SELECT seq, body FROM alert_history ORDER BY seq", [&](sqlite3_stmt* s) {
      return row(sqlite3_column_int64(s, 0), column_text(s, 1));
    });
  }

 private:
  // Prepares `stmt` with sql() the first time, binds `args` and runs it to completion.
  template <class Sql, class... Args>
  Status run(Stmt& stmt, Sql sql, const Args&... args) {
    if (!stmt) {
      const std::string text = sql();
      sqlite3_stmt* prepared = nullptr;
      if (sqlite3_prepare_v3(db_, text.data(), static_cast<int>(text.size()),
                             SQLITE_PREPARE_PERSISTENT, &prepared, nullptr) != SQLITE_OK) {
        sqlite3_finalize(prepared);
        return fail(db_error(db_, fmt::format("prepare {}", text)));
      }
      stmt.reset(prepared);
    }
    sqlite3_stmt* s = stmt.get();
    sqlite3_reset(s);
    Binder binder(s);
    (binder.add(args), ...);
    if (sqlite3_step(s) != SQLITE_DONE) {
      return fail(db_error(db_, sqlite3_sql(s)));
    }
    return {};
  }

  // Runs a query, calling on_row(stmt) for each row; an error on_row returns stops it.
  template <class OnRow>
  Status each(std::string_view sql, OnRow on_row) {
    sqlite3_stmt* prepared = nullptr;
    if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &prepared, nullptr) !=
        SQLITE_OK) {
      sqlite3_finalize(prepared);
      return fail(db_error(db_, fmt::format("prepare {}", sql)));
    }
    const Stmt stmt(prepared);
    int rc;
    while ((rc = sqlite3_step(prepared)) == SQLITE_ROW) GPURENT_CHECK(on_row(prepared));
    if (rc != SQLITE_DONE) return fail(db_error(db_, sql));
    return {};
  }

  sqlite3* db_;
  std::array<Stmt, kObjectTableCount> upserts_;
  std::array<Stmt, kObjectTableCount> removes_;
  Stmt upsert_task_, update_usage_, append_transfer_, append_event_, append_audit_, put_spot_price_,
      prune_spot_prices_, put_rollup_, prune_rollups_, put_alert_rule_, remove_alert_rule_,
      append_alert_, trim_alerts_, rewrite_alert_;
};

constexpr auto kBusyRetry = std::chrono::microseconds(100);
constexpr auto kBusyTimeout = std::chrono::seconds(5);

int retry_promptly(void*, int tries) {
  if (tries * kBusyRetry >= kBusyTimeout) return 0;  // SQLITE_BUSY for the caller
  std::this_thread::sleep_for(kBusyRetry);
  return 1;
}

// Opens the database file, creating it when missing.
Result<sqlite3*> open_database(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    auto error = Error::internal(fmt::format("cannot open database {}: {}", path,
                                             db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_close_v2(db);
    return fail(std::move(error));
  }
  return db;
}

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(sqlite3* db) : db_(db), rows_(db) {}
  // close_v2: the connection closes once rows_'s statements are finalized, after this body.
  ~SqliteStore() override { sqlite3_close_v2(db_); }

  // Checkpoints from now on run on the checkpointer's thread, not in this connection's commits.
  void checkpoint_with(std::unique_ptr<WalCheckpointer> checkpointer) {
    checkpointer_ = std::move(checkpointer);
    checkpointer_->attach(db_);
  }

  Status migrate() {
    GPURENT_CHECK(exec(db_, "PRAGMA journal_mode=WAL"));
    // FULL: a commit in WAL mode is durable across power loss, not only across a process crash.
    GPURENT_CHECK(exec(db_, "PRAGMA synchronous=FULL"));
    // The ledger's UNIQUE id index takes inserts at random places; with SQLite's default 2 MB
    // cache every group commit re-read its pages from the file (bench/RESULTS.md, "Ledger").
    GPURENT_CHECK(exec(db_, "PRAGMA cache_size=-65536"));
    GPURENT_CHECK(exec(db_, "PRAGMA foreign_keys=ON"));
    // The write lock is shared with the rollup writer (store.h), whose transactions last a few
    // milliseconds. SQLite's own busy handler sleeps 1, 2, 5, 10... ms between tries, so a
    // commit that met the lock once waited several times longer than the lock was held, and every
    // acknowledgement queued behind that commit with it; this one tries again every
    // kBusyRetry, up to the same 5 s.
    sqlite3_busy_handler(db_, &retry_promptly, nullptr);
    int version = 0;
    GPURENT_CHECK(each_row(db_, "PRAGMA user_version",
                           [&](sqlite3_stmt* s) { version = sqlite3_column_int(s, 0); }));
    if (version > static_cast<int>(kMigrations.size())) {
      return fail(
          Error::internal(fmt::format("database schema version {} is newer than this binary ({})",
                                      version, kMigrations.size())));
    }
    for (int v = version; v < static_cast<int>(kMigrations.size()); ++v) {
      GPURENT_CHECK(exec(db_, "BEGIN IMMEDIATE"));
      auto applied = exec(db_, kMigrations[v]);
      if (applied) applied = exec(db_, fmt::format("PRAGMA user_version={}", v + 1));
      if (!applied) {
        (void)exec(db_, "ROLLBACK");
        return applied;
      }
      GPURENT_CHECK(exec(db_, "COMMIT"));
    }
    return {};
  }

  // In one read transaction: a consistent view while another connection writes.
  Result<controller::Snapshot> load() override {
    GPURENT_CHECK(exec(db_, "BEGIN"));
    auto snapshot = read_snapshot(rows_);
    (void)exec(db_, "COMMIT");
    return snapshot;
  }

  Status read_rows(const std::function<Status(RowReader&)>& read) override {
    GPURENT_CHECK(exec(db_, "BEGIN"));
    auto outcome = read(rows_);
    (void)exec(db_, "COMMIT");
    return outcome;
  }

  Status write_rows(const std::function<Status(RowWriter&)>& write) override {
    GPURENT_CHECK(exec(db_, "BEGIN IMMEDIATE"));
    auto written = write(rows_);
    if (written) written = exec(db_, "COMMIT");
    if (!written) (void)exec(db_, "ROLLBACK");
    return written;
  }

  Status commit(const controller::ChangeSet& changes) override {
    GPURENT_CHECK(stage(changes));
    return exec(db_, "COMMIT");
  }

  Status stage(const controller::ChangeSet& changes) override {
    // Outside a transaction the connection is in autocommit mode; inside, staged rows wait.
    if (sqlite3_get_autocommit(db_)) GPURENT_CHECK(exec(db_, "BEGIN IMMEDIATE"));
    auto written = write_changes(changes, rows_);
    if (!written) (void)exec(db_, "ROLLBACK");
    return written;
  }

 private:
  template <class OnRow>
  static Status each_row(sqlite3* db, std::string_view sql, OnRow on_row) {
    sqlite3_stmt* prepared = nullptr;
    sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &prepared, nullptr);
    const Stmt stmt(prepared);
    if (!prepared) return fail(db_error(db, sql));
    int rc;
    while ((rc = sqlite3_step(prepared)) == SQLITE_ROW) on_row(prepared);
    if (rc != SQLITE_DONE) return fail(db_error(db, sql));
    return {};
  }

  sqlite3* db_;
  SqliteRows rows_;
  std::unique_ptr<WalCheckpointer> checkpointer_;
};

class SqliteRollupWriter final : public RollupWriter {
 public:
  explicit SqliteRollupWriter(sqlite3* db) : db_(db), rows_(db) {}
  // close_v2: the connection closes once rows_'s statements are finalized, after this body.
  ~SqliteRollupWriter() override { sqlite3_close_v2(db_); }

  Status open() {
    // NORMAL: in WAL mode a commit survives a crash of the process, not of the machine; the
    // store's own connection keeps FULL for everything else (store.h says why this may).
    // The table's key (resolution, bucket, GPU, metric) takes each minute's rows at the end of its
    // bucket's range, but a GPU's rows spread over the range: SQLite's default 2 MB cache re-read
    // pages from the file for most inserts.
    for (const char* pragma :
         {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA cache_size=-65536"}) {
      GPURENT_CHECK(exec(db_, pragma));
    }
    sqlite3_busy_timeout(db_, 5000);
    return {};
  }

  Status write(std::span<const monitor::RollupRow> rows) override {
    if (rows.empty()) return {};
    GPURENT_CHECK(exec(db_, "BEGIN IMMEDIATE"));
    Status written;
    for (const auto& row : rows) {
      written = rows_.put_rollup(row);
      if (!written) break;
    }
    if (written) written = exec(db_, "COMMIT");
    if (!written) (void)exec(db_, "ROLLBACK");
    return written;
  }

 private:
  sqlite3* db_;
  SqliteRows rows_;
};

}  // namespace

Result<std::unique_ptr<Store>> open_sqlite_store(const std::string& path) {
  GPURENT_TRY(db, open_database(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  auto store = std::make_unique<SqliteStore>(db);
  GPURENT_CHECK(store->migrate());
  GPURENT_TRY(checkpointer, WalCheckpointer::open(path));
  store->checkpoint_with(std::move(checkpointer));
  return std::unique_ptr<Store>(std::move(store));
}

Result<std::unique_ptr<RollupWriter>> open_sqlite_rollup_writer(const std::string& path) {
  GPURENT_TRY(db, open_database(path, SQLITE_OPEN_READWRITE));
  auto writer = std::make_unique<SqliteRollupWriter>(db);
  GPURENT_CHECK(writer->open());
  return std::unique_ptr<RollupWriter>(std::move(writer));
}

}  // namespace gpurent::store
