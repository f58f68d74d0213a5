// Moves SQLite's WAL checkpoints off the committing connection.
//
// By default SQLite checkpoints inside the COMMIT that takes the write-ahead log past 1,000 pages:
// that commit copies the log's pages into the database file and syncs it before it returns, so
// whatever waits for that commit (an API request, the agents' long polls) waits for the
// checkpoint too (bench/RESULTS.md). Here the
// committing connection only notes that the log is long (its WAL hook) and a thread of its own,
// on a connection of its own, runs the checkpoint (PASSIVE: it never blocks the writer; the log
// is restarted from its beginning by the next commit after a checkpoint that copied all of it).
// Durability is unchanged: a commit is durable once it is in the log.
//
// Thread-safety: the constructor, destructor and attach() on the thread that owns `db`; the WAL
// hook then runs on that thread at each commit.
#pragma once

#include <sqlite3.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/result.h"

namespace gpurent::store {

class WalCheckpointer {
 public:
  // Opens its own connection to the database at `path` (in WAL mode already).
  static Result<std::unique_ptr<WalCheckpointer>> open(const std::string& path);
  ~WalCheckpointer();
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

  // Turns off `db`'s own automatic checkpoints and wakes this checkpointer instead whenever a
  // commit on `db` leaves the log at `pages` pages or more.
  void attach(sqlite3* db, int pages = 1000);

  // Checkpoints that ran to the end (for tests and diagnostics).
  int completed() const;

 private:
  explicit WalCheckpointer(sqlite3* db);
  static int on_commit(void* self, sqlite3* db, const char* schema, int pages);
  void run();

  sqlite3* db_;  // this checkpointer's own connection
  int threshold_ = 1000;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool wanted_ = false;
  bool stopping_ = false;
  int completed_ = 0;
  std::thread thread_;
};

}  // namespace gpurent::store
