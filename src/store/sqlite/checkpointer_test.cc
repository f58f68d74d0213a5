#include "store/sqlite/checkpointer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "common/random.h"

namespace gpurent::store {
namespace {

class WalCheckpointerTest : public testing::Test {
 protected:
  WalCheckpointerTest()
      : dir_(std::filesystem::temp_directory_path() /
             ("gpurent-checkpointer-test-" + std::to_string(os_random_seed()))) {
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "db").string();
    EXPECT_EQ(
        sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
        SQLITE_OK);
    exec("PRAGMA journal_mode=WAL");
    exec("CREATE TABLE t (v BLOB)");
  }
  ~WalCheckpointerTest() override {
    checkpointer_.reset();
    sqlite3_close_v2(db_);
    std::filesystem::remove_all(dir_);
  }

  void exec(const char* sql) {
    ASSERT_EQ(sqlite3_exec(db_, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db_);
  }
  // One transaction of about 2,000 pages (4 KiB each): past SQLite's own threshold.
  void write_8_mib() {
    exec("BEGIN");
    for (int i = 0; i < 8; ++i) exec("INSERT INTO t VALUES (randomblob(1048576))");
    exec("COMMIT");
  }
  uintmax_t database_file_size() const { return std::filesystem::file_size(path_); }

  std::filesystem::path dir_;
  std::string path_;
  sqlite3* db_ = nullptr;
  std::unique_ptr<WalCheckpointer> checkpointer_;
};

TEST_F(WalCheckpointerTest, ACommitNoLongerCheckpointsItself) {
  auto opened = WalCheckpointer::open(path_);
  ASSERT_TRUE(opened) << opened.error().message;
  checkpointer_ = std::move(*opened);
  checkpointer_->attach(db_, 1'000'000'000);  // never wanted
  write_8_mib();
  // The log holds it all; SQLite's own hook would have copied it into the file by now.
  EXPECT_LT(database_file_size(), 1u << 20);
  EXPECT_EQ(checkpointer_->completed(), 0);
}

TEST_F(WalCheckpointerTest, ALongLogIsCheckpointedOnTheCheckpointersThread) {
  auto opened = WalCheckpointer::open(path_);
  ASSERT_TRUE(opened) << opened.error().message;
  checkpointer_ = std::move(*opened);
  checkpointer_->attach(db_, 1000);
  write_8_mib();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (checkpointer_->completed() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(checkpointer_->completed(), 1);
  EXPECT_GT(database_file_size(), 8u << 20);
  // The next commit starts the log again from its beginning: it does not grow without bound.
  const auto log_size = std::filesystem::file_size(path_ + "-wal");
  exec("INSERT INTO t VALUES (1)");
  EXPECT_EQ(std::filesystem::file_size(path_ + "-wal"), log_size);
  sqlite3_stmt* count = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db_, "SELECT count(*) FROM t", -1, &count, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(count), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(count, 0), 9);
  sqlite3_finalize(count);
}

}  // namespace
}  // namespace gpurent::store
