#include "store/postgres/leader_lease.h"

#include <fmt/format.h>

#include "store/postgres/schema.h"

namespace gpurent::store {

using pg::Params;

Result<LeaderLease> LeaderLease::open(const std::string& database_url, std::string holder,
                                      std::string url, std::chrono::milliseconds ttl) {
  GPURENT_TRY(connection, pg::Connection::open(database_url));
  GPURENT_CHECK(pg::migrate(connection));
  // A takeover waits for a commit that passed the fence (schema.h); a paused leader's open
  // transaction is ended by its own idle timeout, and until then this gives up and tries again.
  GPURENT_CHECK(connection.exec(fmt::format("SET lock_timeout = {}", ttl.count() / 2)));
  GPURENT_CHECK(connection.prepare(
      "acquire",
      "UPDATE leader_lease SET epoch = epoch + 1, holder = $1, url = $2, "
      "backend_pid = pg_backend_pid(), expires_at = clock_timestamp() + $3 * interval '1 ms' "
      "WHERE id = 1 AND (holder = '' OR expires_at < clock_timestamp() OR NOT EXISTS "
      "(SELECT 1 FROM pg_stat_activity WHERE pid = leader_lease.backend_pid)) RETURNING epoch"));
  GPURENT_CHECK(connection.prepare(
      "renew",
      "UPDATE leader_lease SET expires_at = clock_timestamp() + $2 * interval '1 ms', "
      "backend_pid = pg_backend_pid() WHERE id = 1 AND epoch = $1 RETURNING epoch"));
  GPURENT_CHECK(connection.prepare(
      "resign",
      "UPDATE leader_lease SET holder = '', expires_at = '-infinity' WHERE id = 1 AND epoch = $1"));
  GPURENT_CHECK(connection.prepare(
      "leader",
      "SELECT epoch, holder, url FROM leader_lease WHERE id = 1 AND holder <> '' AND "
      "expires_at >= clock_timestamp()"));
  return LeaderLease(std::move(connection), std::move(holder), std::move(url), ttl);
}

Result<std::optional<int64_t>> LeaderLease::try_acquire() {
  GPURENT_TRY(taken, connection_.query_prepared(
                         "acquire", Params(holder_, url_, static_cast<int64_t>(ttl_.count()))));
  if (PQntuples(taken.get()) == 0) return std::nullopt;
  return std::optional<int64_t>(std::stoll(PQgetvalue(taken.get(), 0, 0)));
}

Result<bool> LeaderLease::renew(int64_t epoch) {
  GPURENT_TRY(renewed, connection_.query_prepared(
                           "renew", Params(epoch, static_cast<int64_t>(ttl_.count()))));
  return PQntuples(renewed.get()) == 1;
}

Status LeaderLease::resign(int64_t epoch) {
  GPURENT_TRY(resigned, connection_.query_prepared("resign", Params(epoch)));
  (void)resigned;
  return {};
}

Result<std::optional<LeaderInfo>> LeaderLease::leader() {
  GPURENT_TRY(row, connection_.query_prepared("leader", Params()));
  if (PQntuples(row.get()) == 0) return std::nullopt;
  return std::optional<LeaderInfo>(LeaderInfo{.epoch = std::stoll(PQgetvalue(row.get(), 0, 0)),
                                              .holder = PQgetvalue(row.get(), 0, 1),
                                              .url = PQgetvalue(row.get(), 0, 2)});
}

}  // namespace gpurent::store
