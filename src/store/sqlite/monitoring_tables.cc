#include "store/sqlite/monitoring_tables.h"

#include <fmt/format.h>

#include <memory>
#include <span>
#include <string>

#include "common/json.h"
#include "monitor/alerts_json.h"
#include "store/sqlite/statement.h"
#include "store/store.h"

namespace gpurent::store {

const char* const kMonitoringMigration = R"sql(
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
    )sql";

namespace {

using namespace sqlite_statement;

std::string column_text(sqlite3_stmt* stmt, int index) {
  const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(stmt, index));
  return data ? std::string(data, static_cast<size_t>(sqlite3_column_bytes(stmt, index)))
              : std::string();
}

Status step_done(sqlite3* db, sqlite3_stmt* stmt, std::string_view what) {
  if (sqlite3_step(stmt) != SQLITE_DONE) return fail(db_error(db, what));
  sqlite3_reset(stmt);
  return {};
}

Status insert_rollups(sqlite3* db, std::span<const monitor::RollupRow> rows) {
  if (!rows.empty()) {
    GPURENT_TRY(stmt, prepare(db,
                              "INSERT OR REPLACE INTO gpu_rollups (resolution, bucket_start_ms, "
                              "gpu_uuid, metric, min, max, sum, count) VALUES (?,?,?,?,?,?,?,?)"));
    for (const auto& row : rows) {
      bind_text(stmt.get(), 1, monitor::to_string(row.resolution));
      sqlite3_bind_int64(stmt.get(), 2, row.bucket_start_ms);
      bind_text(stmt.get(), 3, row.gpu_uuid);
      bind_text(stmt.get(), 4, monitor::metric_info(row.metric).name);
      sqlite3_bind_double(stmt.get(), 5, row.min);
      sqlite3_bind_double(stmt.get(), 6, row.max);
      sqlite3_bind_double(stmt.get(), 7, row.sum);
      sqlite3_bind_int64(stmt.get(), 8, row.count);
      GPURENT_CHECK(step_done(db, stmt.get(), "write gpu_rollups"));
    }
  }
  return {};
}

Status write_rollups(sqlite3* db, const controller::MonitoringChanges& c) {
  GPURENT_CHECK(insert_rollups(db, c.rollups));
  if (!c.prune) return {};
  GPURENT_TRY(prune, prepare(db,
                             "DELETE FROM gpu_rollups WHERE resolution = ? AND "
                             "bucket_start_ms < ?"));
  for (const auto& [resolution, before] :
       {std::pair{monitor::Resolution::kMinute, c.prune->minute_before_ms},
        std::pair{monitor::Resolution::kHour, c.prune->hour_before_ms}}) {
    bind_text(prune.get(), 1, monitor::to_string(resolution));
    sqlite3_bind_int64(prune.get(), 2, before);
    GPURENT_CHECK(step_done(db, prune.get(), "prune gpu_rollups"));
  }
  return {};
}

// The transition (monitor/alerts_json.h) and, once acknowledged, acknowledged_by and
// acknowledged_at_ms.
std::string record_body(const controller::AlertRecord& record) {
  Json body = monitor::transition_to_json(record.transition);
  if (record.ack) {
    body["acknowledged_by"] = record.ack->by;
    body["acknowledged_at_ms"] = record.ack->at_ms;
  }
  return body.dump();
}

Status write_alerts(sqlite3* db, const controller::MonitoringChanges& c) {
  if (!c.rule_changes.empty()) {
    GPURENT_TRY(upsert,
                prepare(db, "INSERT OR REPLACE INTO alert_rules (name, body) VALUES (?,?)"));
    GPURENT_TRY(remove, prepare(db, "DELETE FROM alert_rules WHERE name = ?"));
    for (const auto& change : c.rule_changes) {
      sqlite3_stmt* s = change.rule ? upsert.get() : remove.get();
      bind_text(s, 1, change.name);
      if (change.rule) bind_text(s, 2, monitor::rule_to_json(*change.rule).dump());
      GPURENT_CHECK(step_done(db, s, "write alert_rules"));
    }
  }
  if (!c.alert_history.empty()) {
    GPURENT_TRY(insert, prepare(db, "INSERT INTO alert_history (seq, body) VALUES (?,?)"));
    for (const auto& record : c.alert_history) {
      sqlite3_bind_int64(insert.get(), 1, record.seq);
      bind_text(insert.get(), 2, record_body(record));
      GPURENT_CHECK(step_done(db, insert.get(), "write alert_history"));
    }
    GPURENT_TRY(trim, prepare(db, "DELETE FROM alert_history WHERE seq <= ?"));
    sqlite3_bind_int64(
        trim.get(), 1,
        c.alert_history.back().seq - static_cast<int64_t>(controller::kMaxAlertHistory));
    GPURENT_CHECK(step_done(db, trim.get(), "trim alert_history"));
  }
  if (c.acknowledged.empty()) return {};
  // After the inserts: a record may be appended and acknowledged in one commit. A record trimmed
  // since is not written again.
  GPURENT_TRY(update, prepare(db, "UPDATE alert_history SET body = ? WHERE seq = ?"));
  for (const auto& record : c.acknowledged) {
    bind_text(update.get(), 1, record_body(record));
    sqlite3_bind_int64(update.get(), 2, record.seq);
    GPURENT_CHECK(step_done(db, update.get(), "acknowledge in alert_history"));
  }
  return {};
}

}  // namespace

Status write_monitoring(sqlite3* db, const controller::MonitoringChanges& changes) {
  if (changes.empty()) return {};
  GPURENT_CHECK(write_rollups(db, changes));
  return write_alerts(db, changes);
}

Status load_monitoring(sqlite3* db, controller::MonitoringSnapshot& out) {
  const auto corrupt = [](std::string_view what) {
    return fail(Error::internal(fmt::format("corrupt record {}", what)));
  };
  GPURENT_TRY(rollups, prepare(db,
                               "SELECT resolution, bucket_start_ms, gpu_uuid, metric, min, max, "
                               "sum, count FROM gpu_rollups"));
  int rc;
  while ((rc = sqlite3_step(rollups.get())) == SQLITE_ROW) {
    sqlite3_stmt* s = rollups.get();
    auto resolution = monitor::parse_resolution(column_text(s, 0));
    auto metric = monitor::parse_metric(column_text(s, 3));
    if (!resolution || !metric) return corrupt("gpu_rollups");
    out.rollups.push_back({.gpu_uuid = column_text(s, 2),
                           .metric = *metric,
                           .resolution = *resolution,
                           .bucket_start_ms = sqlite3_column_int64(s, 1),
                           .min = sqlite3_column_double(s, 4),
                           .max = sqlite3_column_double(s, 5),
                           .sum = sqlite3_column_double(s, 6),
                           .count = sqlite3_column_int64(s, 7)});
  }
  if (rc != SQLITE_DONE) return fail(db_error(db, "read gpu_rollups"));

  GPURENT_TRY(rules, prepare(db, "SELECT name, body FROM alert_rules ORDER BY name"));
  while ((rc = sqlite3_step(rules.get())) == SQLITE_ROW) {
    auto body = parse_json_object(column_text(rules.get(), 1));
    if (!body) return corrupt("alert_rules/" + column_text(rules.get(), 0));
    auto rule = monitor::rule_from_json(*body);
    if (!rule) return corrupt("alert_rules/" + column_text(rules.get(), 0));
    out.alert_rules.push_back(std::move(*rule));
  }
  if (rc != SQLITE_DONE) return fail(db_error(db, "read alert_rules"));

  GPURENT_TRY(history, prepare(db, "SELECT seq, body FROM alert_history ORDER BY seq"));
  while ((rc = sqlite3_step(history.get())) == SQLITE_ROW) {
    const int64_t seq = sqlite3_column_int64(history.get(), 0);
    auto body = parse_json_object(column_text(history.get(), 1));
    if (!body) return corrupt(fmt::format("alert_history/{}", seq));
    GPURENT_TRY(transition, monitor::transition_from_json(*body));
    std::optional<controller::AlertAck> ack;
    if (const auto by = body->find("acknowledged_by"); by != body->end()) {
      const auto at = body->find("acknowledged_at_ms");
      if (!by->is_string() || at == body->end() || !at->is_number_integer()) {
        return corrupt(fmt::format("alert_history/{}", seq));
      }
      ack = controller::AlertAck{.by = by->get<std::string>(), .at_ms = at->get<int64_t>()};
    }
    out.alert_history.push_back(
        {.seq = seq, .transition = std::move(transition), .ack = std::move(ack)});
  }
  if (rc != SQLITE_DONE) return fail(db_error(db, "read alert_history"));
  return {};
}

namespace {

class SqliteRollupWriter final : public RollupWriter {
 public:
  explicit SqliteRollupWriter(sqlite3* db) : db_(db) {}
  ~SqliteRollupWriter() override { sqlite3_close_v2(db_); }

  Status open() {
    // NORMAL: in WAL mode a commit survives a crash of the process, not of the machine; the
    // store's own connection keeps FULL for everything else (store.h says why this may).
    // The table's key (resolution, bucket, GPU, metric) takes each minute's rows at the end of its
    // bucket's range, but a GPU's rows spread over the range: SQLite's default 2 MB cache re-read
    // pages from the file for most inserts.
    for (const char* pragma :
         {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA cache_size=-65536"}) {
      if (sqlite3_exec(db_, pragma, nullptr, nullptr, nullptr) != SQLITE_OK) {
        return fail(db_error(db_, pragma));
      }
    }
    sqlite3_busy_timeout(db_, 5000);
    return {};
  }

  Status write(std::span<const monitor::RollupRow> rows) override {
    if (rows.empty()) return {};
    if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) {
      return fail(db_error(db_, "begin gpu_rollups"));
    }
    if (auto written = insert_rollups(db_, rows); !written) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return written;
    }
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
      auto error = db_error(db_, "commit gpu_rollups");
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return fail(std::move(error));
    }
    return {};
  }

 private:
  sqlite3* db_;
};

}  // namespace

Result<std::unique_ptr<RollupWriter>> open_sqlite_rollup_writer(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  auto writer = std::make_unique<SqliteRollupWriter>(db);
  if (rc != SQLITE_OK) {
    return fail(Error::internal(fmt::format("cannot open database {}: {}", path,
                                            db ? sqlite3_errmsg(db) : "out of memory")));
  }
  GPURENT_CHECK(writer->open());
  return std::unique_ptr<RollupWriter>(std::move(writer));
}

}  // namespace gpurent::store
