#include "store/sqlite/checkpointer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/threads.h"

namespace gpurent::store {

Result<std::unique_ptr<WalCheckpointer>> WalCheckpointer::open(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    auto error = Error::internal(fmt::format("cannot open database {} for checkpoints: {}", path,
                                             db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_close_v2(db);
    return fail(std::move(error));
  }
  // A checkpoint waits for nothing (PASSIVE), but opening a read of the log may meet a writer
  // restarting it.
  sqlite3_busy_timeout(db, 5000);
  // A connection learns the journal mode at its first read; until then a checkpoint is a no-op.
  if (sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr) != SQLITE_OK) {
    auto error = Error::internal(
        fmt::format("cannot read database {} for checkpoints: {}", path, sqlite3_errmsg(db)));
    sqlite3_close_v2(db);
    return fail(std::move(error));
  }
  return std::unique_ptr<WalCheckpointer>(new WalCheckpointer(db));
}

WalCheckpointer::WalCheckpointer(sqlite3* db) : db_(db), thread_([this] { run(); }) {}

WalCheckpointer::~WalCheckpointer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
  sqlite3_close_v2(db_);
}

void WalCheckpointer::attach(sqlite3* db, int pages) {
  threshold_ = pages;
  // Replaces the hook sqlite3_wal_autocheckpoint installs: the two are one setting.
  sqlite3_wal_hook(db, &WalCheckpointer::on_commit, this);
}

int WalCheckpointer::completed() const {
  std::lock_guard lock(mutex_);
  return completed_;
}

int WalCheckpointer::on_commit(void* self, sqlite3*, const char*, int pages) {
  auto* checkpointer = static_cast<WalCheckpointer*>(self);
  if (pages >= checkpointer->threshold_) {
    {
      std::lock_guard lock(checkpointer->mutex_);
      checkpointer->wanted_ = true;
    }
    checkpointer->wake_.notify_one();
  }
  return SQLITE_OK;
}

void WalCheckpointer::run() {
  name_this_thread("checkpointer");
  // Behind the committer and the API: a checkpoint that waits only lets the log grow a little.
  deprioritize_this_thread(5);
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return wanted_ || stopping_; });
    if (stopping_) return;
    wanted_ = false;
    lock.unlock();
    int log_pages = 0, copied = 0;
    const int rc =
        sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log_pages, &copied);
    lock.lock();
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
      // The log only grows until the next checkpoint works; nothing is lost meanwhile.
      spdlog::warn("WAL checkpoint failed: {}", sqlite3_errmsg(db_));
    } else if (rc == SQLITE_OK && log_pages >= 0 && copied == log_pages) {
      ++completed_;
    }
  }
}

}  // namespace gpurent::store
