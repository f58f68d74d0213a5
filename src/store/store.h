// Persistence of the controller's state.
//
// Contract: commit() writes a whole ChangeSet in one transaction and returns only once it is
// durable (it survives a crash of the process and of the machine); on failure nothing of it is
// written. stage() writes a ChangeSet into that transaction ahead of the commit() that ends it
// (the pieces of a long command, written while the command runs): staged changes are durable
// with that commit and not before, and a failure of either writes nothing of them. Objects are
// upserted whole by id; ledger transfers are append-only and a transfer id that already exists
// fails the whole commit (that would be a double charge). load() returns everything, transfers in
// the order they were committed. Schema migrations run at open.
//
// Thread-safety: one thread at a time (the server's committer thread owns the store).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/result.h"
#include "controller/change_set.h"
#include "store/rows.h"

namespace gpurent::store {

class Store {
 public:
  virtual ~Store() = default;
  virtual Result<controller::Snapshot> load() = 0;
  virtual Status commit(const controller::ChangeSet& changes) = 0;
  virtual Status stage(const controller::ChangeSet& changes) = 0;
  // The whole database's rows (store/rows.h), read in one consistent view while servers write.
  virtual Status read_rows(const std::function<Status(RowReader&)>& read) = 0;
  // Rows written in one transaction, durable when it returns; on failure nothing of them.
  virtual Status write_rows(const std::function<Status(RowWriter&)>& write) = 0;
};

// The embedded default: one SQLite database file in WAL mode with full synchronous commits.
Result<std::unique_ptr<Store>> open_sqlite_store(const std::string& path);

// Whether `url` names a PostgreSQL database (postgres:// or postgresql://).
bool is_postgres_url(std::string_view url);

// The production store, shared by several servers: a PostgreSQL database at `url` (a libpq URI,
// postgres://user@host:port/db), its schema migrated at open (postgres/schema.h). A commit is
// durable once PostgreSQL's commit is (synchronous_commit as the database sets it). With `fence`,
// the epoch this server leads with (postgres/leader_lease.h), every commit is refused by the
// database once a later leader took over: an Error "fenced", and nothing of it written.
Result<std::unique_ptr<Store>> open_postgres_store(const std::string& url,
                                                   std::optional<int64_t> fence = std::nullopt);

// Writes GPU rollup rows (monitor/series_store.h) beside the store, on a connection of its own, in
// transactions of their own: at 80,000 GPUs a minute boundary closes a million rows, and written
// by the committer they held up every acknowledgement queued behind them for seconds. Rollups
// are derived, lossy data (the open minute is lost at a restart anyway), so their commits need not
// be durable before anything: they survive a crash of the process, not necessarily of the
// machine. The same table is pruned through the store's ChangeSet; SQLite serialises the two
// writers (the store retries its lock every 100 µs, and server::RollupPersister paces these
// writes so that they hold the lock at most a tenth of the time). Thread-safety: one thread at a
// time. Open it after the store (which creates the table).
class RollupWriter {
 public:
  virtual ~RollupWriter() = default;
  virtual Status write(std::span<const monitor::RollupRow> rows) = 0;
};
Result<std::unique_ptr<RollupWriter>> open_sqlite_rollup_writer(const std::string& path);
Result<std::unique_ptr<RollupWriter>> open_postgres_rollup_writer(const std::string& url);

// A secret every server on the PostgreSQL database at `url` shares (the services proxy's session
// key): the stored value of `name`, or `candidate`, stored now, when there is none yet. Servers
// asking at once all get the one value that was stored.
Result<std::string> postgres_shared_secret(const std::string& url, std::string_view name,
                                           std::string_view candidate);
// Replaces the stored value of `name` with `replacement` if it still is `expected` (a secret
// stored plain, sealed now: servers doing it at once seal it once).
Status postgres_replace_shared_secret(const std::string& url, std::string_view name,
                                      std::string_view expected, std::string_view replacement);

}  // namespace gpurent::store
