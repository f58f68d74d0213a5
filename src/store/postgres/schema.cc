#include "store/postgres/schema.h"

#include <fmt/format.h>

#include <array>
#include <string>

#include "store/rows.h"

namespace gpurent::store::pg {
namespace {

std::string object_table(ObjectTable table) {
  return fmt::format(
      "CREATE TABLE {} (seq BIGINT GENERATED ALWAYS AS IDENTITY, id TEXT PRIMARY KEY, "
      "tenant_id TEXT NOT NULL, body TEXT NOT NULL);\n",
      table_name(table));
}

// Version 1 is the SQLite store's schema at its version 11 (sqlite/sqlite_store.cc), plus the
// lease: the object tables up to gpu_quarantines (later ones come with later versions). Objects'
// seq keeps their first insertion's order.
std::string first_schema() {
  std::string sql;
  for (size_t i = 0; i <= static_cast<size_t>(ObjectTable::kGpuQuarantines); ++i) {
    sql += object_table(static_cast<ObjectTable>(i));
  }
  sql += R"sql(
    CREATE TABLE job_tasks (
      job_id TEXT NOT NULL,
      idx INTEGER NOT NULL CHECK (idx >= 0),
      state TEXT NOT NULL,
      attempts INTEGER NOT NULL,
      exit_code INTEGER,
      members TEXT NOT NULL,
      PRIMARY KEY (job_id, idx)
    );
    CREATE TABLE ledger_transfers (
      seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      id TEXT NOT NULL UNIQUE,
      at_ms BIGINT NOT NULL,
      from_account TEXT NOT NULL,
      to_account TEXT NOT NULL,
      amount_micros BIGINT NOT NULL CHECK (amount_micros > 0),
      kind TEXT NOT NULL,
      tenant_id TEXT NOT NULL,
      reference TEXT NOT NULL,
      CHECK (from_account <> to_account)
    );
    CREATE INDEX ledger_transfers_tenant ON ledger_transfers (tenant_id, seq);
    CREATE TABLE events (
      seq BIGINT PRIMARY KEY CHECK (seq > 0),
      at_ms BIGINT NOT NULL,
      tenant_id TEXT NOT NULL,
      object_id TEXT NOT NULL,
      kind TEXT NOT NULL,
      message TEXT NOT NULL
    );
    CREATE INDEX events_object ON events (object_id, seq);
    CREATE TABLE spot_prices (
      gpu_type TEXT NOT NULL,
      at_ms BIGINT NOT NULL,
      body TEXT NOT NULL,
      PRIMARY KEY (gpu_type, at_ms)
    );
    CREATE TABLE gpu_rollups (
      resolution TEXT NOT NULL,
      bucket_start_ms BIGINT NOT NULL,
      gpu_uuid TEXT NOT NULL,
      metric TEXT NOT NULL,
      min DOUBLE PRECISION NOT NULL,
      max DOUBLE PRECISION NOT NULL,
      sum DOUBLE PRECISION NOT NULL,
      count BIGINT NOT NULL CHECK (count > 0),
      PRIMARY KEY (resolution, bucket_start_ms, gpu_uuid, metric)
    );
    CREATE TABLE alert_rules (name TEXT PRIMARY KEY, body TEXT NOT NULL);
    CREATE TABLE alert_history (seq BIGINT PRIMARY KEY CHECK (seq > 0), body TEXT NOT NULL);

    CREATE TABLE leader_lease (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      epoch BIGINT NOT NULL,
      holder TEXT NOT NULL,
      url TEXT NOT NULL,
      backend_pid INTEGER NOT NULL,
      expires_at TIMESTAMPTZ NOT NULL
    );
    INSERT INTO leader_lease VALUES (1, 0, '', '', 0, '-infinity');
    CREATE FUNCTION gpurent_fence(expected BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM 1 FROM leader_lease WHERE id = 1 AND epoch = expected FOR SHARE;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'epoch % no longer holds the leadership: a later leader took over',
          expected USING ERRCODE = 'GR001';
      END IF;
    END $$;
  )sql";
  return sql;
}

// The advisory lock's key: any fixed number no other user of the database takes.
constexpr int64_t kMigrationLock = 0x67707265'6e74'01;

}  // namespace

Status migrate(Connection& connection) {
  const std::array<std::string, 4> migrations = {
      first_schema(),
      // Secrets every server of the database shares (store.h: postgres_shared_secret).
      "CREATE TABLE server_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL);",
      // The audit log (model/audit.h), as the SQLite store's version 12.
      "CREATE TABLE audit_log (seq BIGINT PRIMARY KEY CHECK (seq > 0), at_ms BIGINT NOT NULL, "
      "tenant_id TEXT NOT NULL, body TEXT NOT NULL); "
      "CREATE INDEX audit_log_tenant ON audit_log (tenant_id, seq);",
      // Each GPU's benchmark history, as the SQLite store's version 13.
      object_table(ObjectTable::kGpuBenchmarks),
  };
  GPURENT_CHECK(connection.exec("BEGIN"));
  const auto applied = [&]() -> Status {
    GPURENT_TRY(locked,
                connection.query(fmt::format("SELECT pg_advisory_xact_lock({})", kMigrationLock)));
    (void)locked;
    GPURENT_CHECK(connection.exec(
        "CREATE TABLE IF NOT EXISTS gpurent_schema (id INTEGER PRIMARY KEY CHECK (id = 1), "
        "version INTEGER NOT NULL); "
        "INSERT INTO gpurent_schema VALUES (1, 0) ON CONFLICT (id) DO NOTHING"));
    GPURENT_TRY(read, connection.query("SELECT version FROM gpurent_schema"));
    const int version = std::atoi(PQgetvalue(read.get(), 0, 0));
    if (version > static_cast<int>(migrations.size())) {
      return fail(
          Error::internal(fmt::format("database schema version {} is newer than this binary ({})",
                                      version, migrations.size())));
    }
    for (size_t v = static_cast<size_t>(version); v < migrations.size(); ++v) {
      GPURENT_CHECK(connection.exec(migrations[v]));
    }
    return connection.exec(
        fmt::format("UPDATE gpurent_schema SET version = {}", migrations.size()));
  }();
  if (!applied) {
    (void)connection.exec("ROLLBACK");
    return applied;
  }
  return connection.exec("COMMIT");
}

Status prepare_fence(Connection& connection) {
  return connection.prepare("fence", "SELECT gpurent_fence($1)");
}

}  // namespace gpurent::store::pg
