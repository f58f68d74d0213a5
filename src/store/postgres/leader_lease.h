// Leadership of a control plane whose servers share one PostgreSQL store: the lease row
// (schema.h), taken, renewed and given up on a connection of its own. The times are the
// database's clock, never a server's, so servers with skewed clocks agree on expiry.
//
// A lease is taken when it is free, expired, or its holder's lease connection is gone (a killed
// leader's connection ends at once, so a standby need not wait out the lease; a paused leader's
// connection stays open, and its lease expires). Taking it increments the epoch; the leader's
// store (open_postgres_store with that epoch) is fenced by it.
//
// Thread-safety: one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "store/postgres/connection.h"

namespace gpurent::store {

struct LeaderInfo {
  int64_t epoch = 0;
  std::string holder;
  std::string url;  // where the leader serves the API
};

class LeaderLease {
 public:
  // `holder` names this server (unique per process), `url` is where it serves the API, and
  // `ttl` how long a lease lasts without renewal.
  static Result<LeaderLease> open(const std::string& database_url, std::string holder,
                                  std::string url, std::chrono::milliseconds ttl);

  // Takes the lease when it may be taken: the new epoch, or nullopt when another server holds it.
  Result<std::optional<int64_t>> try_acquire();
  // Extends the lease of `epoch` by the ttl from now: false once a later epoch holds it (this
  // server is deposed and must stop serving at once).
  Result<bool> renew(int64_t epoch);
  // Gives up the lease of `epoch` at once, so that a standby takes over without waiting.
  Status resign(int64_t epoch);
  // The current leader, while its lease is valid.
  Result<std::optional<LeaderInfo>> leader();

 private:
  LeaderLease(pg::Connection connection, std::string holder, std::string url,
              std::chrono::milliseconds ttl)
      : connection_(std::move(connection)),
        holder_(std::move(holder)),
        url_(std::move(url)),
        ttl_(ttl) {}

  pg::Connection connection_;
  std::string holder_;
  std::string url_;
  std::chrono::milliseconds ttl_;
};

}  // namespace gpurent::store
