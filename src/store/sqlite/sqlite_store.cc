// SQLite backend of the Store.
//
// Objects live in one table per kind as (id, tenant_id, body JSON): the controller keeps the
// state in memory and reads it back whole at start, so the store needs no per-field queries, and
// adding a field to a type needs no migration. A job's tasks are the exception: they are rows of
// job_tasks keyed (job_id, idx) with real columns, written one by one as tasks change, so that a
// task of an array of thousands starting does not rewrite the whole array (the job's body keeps
// "tasks": []). A job member's instance row leaves out what its job determines
// (model::instance_row_json), so instances are read after jobs. Money does not go into JSON:
// ledger transfers have real columns, an append-only table with a UNIQUE id, and a CHECK on the
// amount.
#include <sqlite3.h>

#include <array>
#include <chrono>
#include <set>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>

#include <fmt/format.h>

#include "billing/spot_market.h"
#include "model/codec.h"
#include "model/price_book.h"
#include "store/sqlite/checkpointer.h"
#include "store/sqlite/metering_rows.h"
#include "store/sqlite/monitoring_tables.h"
#include "store/store.h"

namespace gpurent::store {
namespace {

// Each entry moves the schema from version i to i + 1. Never edit a released entry: append.
const std::array<std::string, 11> kMigrations = {
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
    // GPU rollups, alert rules and alert history (monitoring_tables.h).
    kMonitoringMigration,
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
};

class Statement {
 public:
  Statement(sqlite3* db, std::string_view sql) {
    sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  sqlite3_stmt* get() const { return stmt_; }
  explicit operator bool() const { return stmt_ != nullptr; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

constexpr auto kBusyRetry = std::chrono::microseconds(100);
constexpr auto kBusyTimeout = std::chrono::seconds(5);

int retry_promptly(void*, int tries) {
  if (tries * kBusyRetry >= kBusyTimeout) return 0;  // SQLITE_BUSY for the caller
  std::this_thread::sleep_for(kBusyRetry);
  return 1;
}

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(sqlite3* db) : db_(db) {}
  ~SqliteStore() override { sqlite3_close_v2(db_); }

  // Checkpoints from now on run on the checkpointer's thread, not in this connection's commits.
  void checkpoint_with(std::unique_ptr<WalCheckpointer> checkpointer) {
    checkpointer_ = std::move(checkpointer);
    checkpointer_->attach(db_);
  }

  Status migrate() {
    GPURENT_CHECK(exec("PRAGMA journal_mode=WAL"));
    // FULL: a commit in WAL mode is durable across power loss, not only across a process crash.
    GPURENT_CHECK(exec("PRAGMA synchronous=FULL"));
    // The ledger's UNIQUE id index takes inserts at random places; with SQLite's default 2 MB
    // cache every group commit re-read its pages from the file (bench/RESULTS.md, "Ledger").
    GPURENT_CHECK(exec("PRAGMA cache_size=-65536"));
    GPURENT_CHECK(exec("PRAGMA foreign_keys=ON"));
    // The write lock is shared with the rollup writer (store.h), whose transactions last a few
    // milliseconds. SQLite's own busy handler sleeps 1, 2, 5, 10... ms between tries, so a
    // commit that met the lock once waited several times longer than the lock was held, and every
    // acknowledgement queued behind that commit with it; this one tries again every
    // kBusyRetry, up to the same 5 s.
    sqlite3_busy_handler(db_, &retry_promptly, nullptr);
    int version = 0;
    {
      Statement stmt(db_, "PRAGMA user_version");
      if (!stmt || sqlite3_step(stmt.get()) != SQLITE_ROW)
        return fail(db_error("read schema version"));
      version = sqlite3_column_int(stmt.get(), 0);
    }
    if (version > static_cast<int>(kMigrations.size())) {
      return fail(
          Error::internal(fmt::format("database schema version {} is newer than this binary ({})",
                                      version, kMigrations.size())));
    }
    for (int v = version; v < static_cast<int>(kMigrations.size()); ++v) {
      GPURENT_CHECK(exec("BEGIN IMMEDIATE"));
      auto applied = exec(kMigrations[v]);
      if (applied) applied = exec(fmt::format("PRAGMA user_version={}", v + 1));
      if (!applied) {
        (void)exec("ROLLBACK");
        return applied;
      }
      GPURENT_CHECK(exec("COMMIT"));
    }
    return {};
  }

  Result<controller::Snapshot> load() override {
    controller::Snapshot snapshot;
    GPURENT_CHECK(load_objects("tenants", snapshot.tenants));
    GPURENT_CHECK(load_objects("api_keys", snapshot.api_keys));
    GPURENT_CHECK(load_objects("join_tokens", snapshot.join_tokens));
    GPURENT_CHECK(load_objects("nodes", snapshot.nodes));
    GPURENT_CHECK(load_objects("jobs", snapshot.jobs));
    GPURENT_CHECK(load_job_tasks(snapshot.jobs));
    GPURENT_CHECK(load_instances(snapshot.jobs, snapshot.instances));
    GPURENT_CHECK(load_objects("reservations", snapshot.reservations));
    GPURENT_CHECK(load_objects("quotas", snapshot.quotas));
    GPURENT_CHECK(load_objects("templates", snapshot.templates));
    GPURENT_CHECK(load_objects("usage_records", snapshot.usage));
    GPURENT_CHECK(load_objects("volumes", snapshot.volumes));
    GPURENT_CHECK(load_objects("idempotency_keys", snapshot.idempotency));
    GPURENT_CHECK(load_events(snapshot.events));
    GPURENT_CHECK(load_objects("price_versions", snapshot.price_versions));
    GPURENT_CHECK(load_spot_prices(snapshot.spot_prices));
    GPURENT_CHECK(load_objects("package_products", snapshot.package_products));
    GPURENT_CHECK(load_objects("packages", snapshot.packages));
    GPURENT_CHECK(load_objects("balance_settings", snapshot.balance_settings));
    GPURENT_CHECK(load_objects("downtime", snapshot.downtime));
    GPURENT_CHECK(load_objects("gpu_quarantines", snapshot.gpu_quarantines));
    GPURENT_CHECK(load_monitoring(db_, snapshot.monitoring));
    Statement stmt(db_,
                   "SELECT id, at_ms, from_account, to_account, amount_micros, kind, tenant_id, "
                   "reference FROM ledger_transfers ORDER BY seq");
    if (!stmt) return fail(db_error("read ledger"));
    int rc;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      model::Transfer t;
      t.id = text(stmt.get(), 0);
      t.at = from_unix_ms(sqlite3_column_int64(stmt.get(), 1));
      t.from_account = text(stmt.get(), 2);
      t.to_account = text(stmt.get(), 3);
      t.amount = sqlite3_column_int64(stmt.get(), 4);
      if (!model::parse_transfer_kind(text(stmt.get(), 5), &t.kind)) {
        return fail(Error::internal(fmt::format("ledger transfer {} has an unknown kind", t.id)));
      }
      t.tenant_id = text(stmt.get(), 6);
      t.reference = text(stmt.get(), 7);
      snapshot.transfers.push_back(std::move(t));
    }
    if (rc != SQLITE_DONE) return fail(db_error("read ledger"));
    return snapshot;
  }

  Status commit(const controller::ChangeSet& changes) override {
    GPURENT_CHECK(stage(changes));
    return exec("COMMIT");
  }

  Status stage(const controller::ChangeSet& changes) override {
    // Outside a transaction the connection is in autocommit mode; inside, staged rows wait.
    if (sqlite3_get_autocommit(db_)) GPURENT_CHECK(exec("BEGIN IMMEDIATE"));
    auto written = write(changes);
    if (!written) (void)exec("ROLLBACK");
    return written;
  }

 private:
  Status write(const controller::ChangeSet& c) {
    GPURENT_CHECK(upsert("tenants", c.tenants, [](const auto& v) { return v.id; }));
    GPURENT_CHECK(upsert("api_keys", c.api_keys, [](const auto& v) { return v.tenant_id; }));
    GPURENT_CHECK(upsert("join_tokens", c.join_tokens, [](const auto&) { return std::string(); }));
    GPURENT_CHECK(upsert("nodes", c.nodes, [](const auto&) { return std::string(); }));
    GPURENT_CHECK(upsert("instances", c.instances, [](const auto& v) { return v.tenant_id; }));
    GPURENT_CHECK(upsert_rows("instances", c.instance_rows));
    GPURENT_CHECK(upsert("jobs", c.jobs, [](const auto& v) { return v.tenant_id; }));
    GPURENT_CHECK(upsert_job_tasks(c.job_tasks));
    GPURENT_CHECK(
        upsert("reservations", c.reservations, [](const auto& v) { return v.tenant_id; }));
    GPURENT_CHECK(upsert("quotas", c.quotas, [](const auto& v) { return v.tenant_id; }));
    GPURENT_CHECK(write_template_changes(c.template_changes));
    GPURENT_CHECK(write_usage_records(db_, c));
    GPURENT_CHECK(upsert("volumes", c.volumes, [](const auto& v) { return v.tenant_id; }));
    GPURENT_CHECK(upsert_idempotency(c.idempotency));
    GPURENT_CHECK(append_events(c.events));
    if (!c.price_versions.empty()) {
      std::vector<controller::ObjectRow> versions;
      for (const auto& v : c.price_versions) {
        versions.push_back({std::to_string(v.version), "", Json(v).dump()});
      }
      GPURENT_CHECK(upsert_rows("price_versions", versions));
    }
    GPURENT_CHECK(append_spot_prices(c.spot_prices));
    GPURENT_CHECK(
        upsert("package_products", c.package_products, [](const auto&) { return std::string(); }));
    GPURENT_CHECK(upsert("packages", c.packages, [](const auto& v) { return v.tenant_id; }));
    GPURENT_CHECK(
        upsert("balance_settings", c.balance_settings, [](const auto& v) { return v.tenant_id; }));
    GPURENT_CHECK(upsert("downtime", c.downtime, [](const auto& v) { return v.tenant_id; }));
    GPURENT_CHECK(
        upsert("gpu_quarantines", c.gpu_quarantines, [](const auto&) { return std::string(); }));
    GPURENT_CHECK(write_monitoring(db_, c.monitoring_changes));
    return append_transfers(db_, c);
  }

  Status append_events(const std::vector<model::Event>& events) {
    if (events.empty()) return {};
    Statement stmt(db_,
                   "INSERT INTO events (seq, at_ms, tenant_id, object_id, kind, message) "
                   "VALUES (?,?,?,?,?,?)");
    if (!stmt) return fail(db_error("prepare event insert"));
    for (const auto& e : events) {
      sqlite3_reset(stmt.get());
      sqlite3_bind_int64(stmt.get(), 1, e.seq);
      sqlite3_bind_int64(stmt.get(), 2, to_unix_ms(e.at));
      bind(stmt.get(), 3, e.tenant_id);
      bind(stmt.get(), 4, e.object_id);
      bind(stmt.get(), 5, e.kind);
      bind(stmt.get(), 6, e.message);
      if (sqlite3_step(stmt.get()) != SQLITE_DONE) {
        return fail(db_error(fmt::format("append event {}", e.seq)));
      }
    }
    return {};
  }

  // The most recent model::kMaxEventsInMemory events, oldest first.
  Status load_events(std::vector<model::Event>& out) {
    Statement stmt(db_,
                   fmt::format("SELECT seq, at_ms, tenant_id, object_id, kind, message FROM "
                               "(SELECT * FROM events ORDER BY seq DESC LIMIT {}) ORDER BY seq",
                               model::kMaxEventsInMemory));
    if (!stmt) return fail(db_error("read events"));
    int rc;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      out.push_back({.seq = sqlite3_column_int64(stmt.get(), 0),
                     .at = from_unix_ms(sqlite3_column_int64(stmt.get(), 1)),
                     .tenant_id = text(stmt.get(), 2),
                     .object_id = text(stmt.get(), 3),
                     .kind = text(stmt.get(), 4),
                     .message = text(stmt.get(), 5)});
    }
    if (rc != SQLITE_DONE) return fail(db_error("read events"));
    return {};
  }

  // Objects are keyed by their id; a quota, one per tenant, by its tenant; a package product by
  // its name.
  template <class T>
  static const std::string& object_id(const T& object) {
    if constexpr (requires { object.id; }) {
      return object.id;
    } else if constexpr (requires { object.name; }) {
      return object.name;
    } else {
      return object.tenant_id;
    }
  }

  template <class T, class TenantOf>
  Status upsert(std::string_view table, const std::vector<T>& objects, TenantOf tenant_of) {
    if (objects.empty()) return {};
    Statement stmt(db_, fmt::format("INSERT INTO {} (id, tenant_id, body) VALUES (?,?,?) "
                                    "ON CONFLICT(id) DO UPDATE SET tenant_id=excluded.tenant_id, "
                                    "body=excluded.body",
                                    table));
    if (!stmt) return fail(db_error(fmt::format("prepare upsert into {}", table)));
    for (const auto& object : objects) {
      if constexpr (std::is_same_v<T, model::Instance>) {
        // The most written kind: serialized without building a JSON tree first.
        GPURENT_CHECK(
            put(stmt.get(), object.id, tenant_of(object), model::instance_row_json(object)));
      } else {
        GPURENT_CHECK(put(stmt.get(), object_id(object), tenant_of(object), Json(object).dump()));
      }
    }
    return {};
  }

  Status upsert_rows(std::string_view table, const std::vector<controller::ObjectRow>& rows) {
    if (rows.empty()) return {};
    Statement stmt(db_, fmt::format("INSERT INTO {} (id, tenant_id, body) VALUES (?,?,?) "
                                    "ON CONFLICT(id) DO UPDATE SET tenant_id=excluded.tenant_id, "
                                    "body=excluded.body",
                                    table));
    if (!stmt) return fail(db_error(fmt::format("prepare upsert into {}", table)));
    for (const auto& row : rows) GPURENT_CHECK(put(stmt.get(), row.id, row.tenant_id, row.body));
    return {};
  }

  Status upsert_job_tasks(const std::vector<controller::JobTaskChange>& changes) {
    if (changes.empty()) return {};
    // A task's members are fixed when the job is created; written again, they are the same.
    Statement stmt(
        db_,
        "INSERT INTO job_tasks (job_id, idx, state, attempts, exit_code, members) "
        "VALUES (?,?,?,?,?,?) ON CONFLICT(job_id, idx) DO UPDATE SET "
        "state=excluded.state, attempts=excluded.attempts, exit_code=excluded.exit_code");
    if (!stmt) return fail(db_error("prepare job task upsert"));
    for (const auto& change : changes) {
      const model::JobTask& task = change.task;
      sqlite3_stmt* s = stmt.get();
      sqlite3_reset(s);
      bind(s, 1, change.job_id);
      sqlite3_bind_int(s, 2, task.index);
      bind(s, 3, model::to_string(task.state));
      sqlite3_bind_int(s, 4, task.attempts);
      if (task.exit_code) {
        sqlite3_bind_int(s, 5, *task.exit_code);
      } else {
        sqlite3_bind_null(s, 5);
      }
      bind(s, 6, model::strings_json(task.members));
      if (sqlite3_step(s) != SQLITE_DONE) {
        return fail(db_error(fmt::format("write task {} of job {}", task.index, change.job_id)));
      }
    }
    return {};
  }

  // Puts each job's task rows back into it, in index order; a missing index is corruption.
  Status load_job_tasks(std::vector<model::Job>& jobs) {
    std::unordered_map<std::string, model::Job*> by_id;
    for (auto& job : jobs) by_id.emplace(job.id, &job);
    Statement stmt(db_,
                   "SELECT job_id, idx, state, attempts, exit_code, members FROM job_tasks "
                   "ORDER BY job_id, idx");
    if (!stmt) return fail(db_error("read job_tasks"));
    int rc;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      sqlite3_stmt* s = stmt.get();
      const std::string job_id = text(s, 0);
      model::JobTask task;
      task.index = sqlite3_column_int(s, 1);
      const auto job = by_id.find(job_id);
      const auto corrupt = [&](std::string_view what) {
        return fail(Error::internal(
            fmt::format("corrupt record job_tasks/{}/{}: {}", job_id, task.index, what)));
      };
      if (job == by_id.end()) return corrupt("no such job");
      if (static_cast<size_t>(task.index) != job->second->tasks.size()) {
        return corrupt("tasks are not numbered 0, 1, 2, ...");
      }
      if (!model::parse_job_state(text(s, 2), &task.state)) return corrupt("unknown state");
      task.attempts = sqlite3_column_int(s, 3);
      if (sqlite3_column_type(s, 4) != SQLITE_NULL) task.exit_code = sqlite3_column_int(s, 4);
      try {  // nlohmann reports a corrupt record by throwing
        task.members = Json::parse(text(s, 5)).get<std::vector<std::string>>();
      } catch (const std::exception& e) {
        return corrupt(e.what());
      }
      job->second->tasks.push_back(std::move(task));
    }
    if (rc != SQLITE_DONE) return fail(db_error("read job_tasks"));
    for (const auto& job : jobs) {
      if (job.tasks.size() != static_cast<size_t>(job.spec.array)) {
        return fail(Error::internal(fmt::format("corrupt record jobs/{}: {} of its {} tasks stored",
                                                job.id, job.tasks.size(), job.spec.array)));
      }
    }
    return {};
  }

  // In order: a template set, deleted and set again in one batch ends set.
  Status write_template_changes(const std::vector<controller::TemplateChange>& changes) {
    if (changes.empty()) return {};
    Statement upsert_stmt(db_,
                          "INSERT INTO templates (id, tenant_id, body) VALUES (?,'',?) "
                          "ON CONFLICT(id) DO UPDATE SET body=excluded.body");
    Statement delete_stmt(db_, "DELETE FROM templates WHERE id = ?");
    if (!upsert_stmt || !delete_stmt) return fail(db_error("prepare template writes"));
    for (const auto& change : changes) {
      sqlite3_stmt* s = change.template_ ? upsert_stmt.get() : delete_stmt.get();
      sqlite3_reset(s);
      bind(s, 1, change.name);
      if (change.template_) bind(s, 2, Json(*change.template_).dump());
      if (sqlite3_step(s) != SQLITE_DONE) {
        return fail(db_error(fmt::format("write template {}", change.name)));
      }
    }
    return {};
  }

  Status append_spot_prices(const std::vector<model::SpotPricePoint>& points) {
    if (points.empty()) return {};
    Statement insert(db_,
                     "INSERT OR REPLACE INTO spot_prices (gpu_type, at_ms, body) VALUES (?,?,?)");
    // Keeps the newest points of the type, as the market does in memory.
    Statement prune(db_, fmt::format("DELETE FROM spot_prices WHERE gpu_type = ?1 AND at_ms < "
                                     "(SELECT at_ms FROM spot_prices WHERE gpu_type = ?1 "
                                     "ORDER BY at_ms DESC LIMIT 1 OFFSET {})",
                                     billing::kMaxSpotPointsPerType - 1));
    if (!insert || !prune) return fail(db_error("prepare spot price writes"));
    std::set<std::string_view> types;
    for (const auto& point : points) {
      sqlite3_reset(insert.get());
      bind(insert.get(), 1, point.gpu_type);
      sqlite3_bind_int64(insert.get(), 2, to_unix_ms(point.at));
      bind(insert.get(), 3, Json(point).dump());
      if (sqlite3_step(insert.get()) != SQLITE_DONE) {
        return fail(db_error(fmt::format("write spot price of {}", point.gpu_type)));
      }
      types.insert(point.gpu_type);
    }
    for (const auto type : types) {
      sqlite3_reset(prune.get());
      bind(prune.get(), 1, type);
      if (sqlite3_step(prune.get()) != SQLITE_DONE) return fail(db_error("prune spot prices"));
    }
    return {};
  }

  Status load_spot_prices(std::vector<model::SpotPricePoint>& out) {
    Statement stmt(db_, "SELECT gpu_type, at_ms, body FROM spot_prices ORDER BY gpu_type, at_ms");
    if (!stmt) return fail(db_error("read spot_prices"));
    int rc;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      try {  // nlohmann reports a corrupt record by throwing
        out.push_back(Json::parse(text(stmt.get(), 2)).get<model::SpotPricePoint>());
      } catch (const std::exception& e) {
        return fail(
            Error::internal(fmt::format("corrupt record spot_prices/{}/{}: {}", text(stmt.get(), 0),
                                        sqlite3_column_int64(stmt.get(), 1), e.what())));
      }
    }
    if (rc != SQLITE_DONE) return fail(db_error("read spot_prices"));
    return {};
  }

  Status upsert_idempotency(const std::vector<model::IdempotencyRecord>& records) {
    if (records.empty()) return {};
    Statement stmt(db_,
                   "INSERT OR REPLACE INTO idempotency_keys (id, tenant_id, body) VALUES (?,?,?)");
    if (!stmt) return fail(db_error("prepare idempotency insert"));
    for (const auto& record : records) {
      GPURENT_CHECK(put(stmt.get(), record.tenant_id + "/" + record.key, record.tenant_id,
                        Json(record).dump()));
    }
    return {};
  }

  Status put(sqlite3_stmt* stmt, const std::string& id, const std::string& tenant_id,
             const std::string& body) {
    sqlite3_reset(stmt);
    bind(stmt, 1, id);
    bind(stmt, 2, tenant_id);
    bind(stmt, 3, body);
    if (sqlite3_step(stmt) != SQLITE_DONE) return fail(db_error(fmt::format("write {}", id)));
    return {};
  }

  template <class T>
  Status load_objects(std::string_view table, std::vector<T>& out) {
    Statement stmt(db_, fmt::format("SELECT id, body FROM {} ORDER BY rowid", table));
    if (!stmt) return fail(db_error(fmt::format("read {}", table)));
    int rc;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      const std::string id = text(stmt.get(), 0);
      try {  // nlohmann reports a corrupt record by throwing
        out.push_back(Json::parse(text(stmt.get(), 1)).get<T>());
      } catch (const std::exception& e) {
        return fail(Error::internal(fmt::format("corrupt record {}/{}: {}", table, id, e.what())));
      }
    }
    if (rc != SQLITE_DONE) return fail(db_error(fmt::format("read {}", table)));
    return {};
  }

  // Instances' rows are model::instance_row_json's: a job member's takes its spec from its job.
  Status load_instances(const std::vector<model::Job>& jobs, std::vector<model::Instance>& out) {
    std::unordered_map<std::string_view, const model::Job*> by_id;
    for (const auto& job : jobs) by_id.emplace(job.id, &job);
    const auto job_of = [&](std::string_view id) -> const model::Job* {
      const auto it = by_id.find(id);
      return it == by_id.end() ? nullptr : it->second;
    };
    Statement stmt(db_, "SELECT id, body FROM instances ORDER BY rowid");
    if (!stmt) return fail(db_error("read instances"));
    int rc;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      const std::string id = text(stmt.get(), 0);
      try {  // nlohmann reports a corrupt record by throwing
        out.push_back(model::instance_from_row(Json::parse(text(stmt.get(), 1)), job_of));
      } catch (const std::exception& e) {
        return fail(Error::internal(fmt::format("corrupt record instances/{}: {}", id, e.what())));
      }
    }
    if (rc != SQLITE_DONE) return fail(db_error("read instances"));
    return {};
  }

  static void bind(sqlite3_stmt* stmt, int index, std::string_view value) {
    sqlite3_bind_text(stmt, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  }
  static std::string text(sqlite3_stmt* stmt, int column) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt, column)))
             : std::string();
  }

  Status exec(const std::string& sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      Error error = Error::internal(fmt::format("sqlite: {}", message ? message : "unknown error"));
      sqlite3_free(message);
      return fail(std::move(error));
    }
    return {};
  }

  Error db_error(std::string_view what) const {
    return Error::internal(fmt::format("sqlite: {}: {}", what, sqlite3_errmsg(db_)));
  }

  sqlite3* db_;
  std::unique_ptr<WalCheckpointer> checkpointer_;
};

}  // namespace

Result<std::unique_ptr<Store>> open_sqlite_store(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  auto store = std::make_unique<SqliteStore>(db);
  if (rc != SQLITE_OK) {
    return fail(Error::internal(fmt::format("cannot open database {}: {}", path,
                                            db ? sqlite3_errmsg(db) : "out of memory")));
  }
  GPURENT_CHECK(store->migrate());
  GPURENT_TRY(checkpointer, WalCheckpointer::open(path));
  store->checkpoint_with(std::move(checkpointer));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace gpurent::store
