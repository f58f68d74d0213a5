// What only the SQLite backend does: share its file's write lock with another writer, and read
// databases that earlier versions wrote. The rest is the conformance suite's (store_test.cc).
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "common/json.h"
#include "common/random.h"
#include "model/codec.h"
#include "store/store.h"
#include "store/store_test_util.h"

namespace gpurent::store {
namespace {

using namespace test;

class SqliteStoreTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpurent-store-test-" + std::to_string(os_random_seed()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "state.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(SqliteStoreTest, ACommitWaitsForAnotherWritersTransactionAndThenLands) {
  auto store = open_sqlite_store(path_);
  ASSERT_TRUE(store) << store.error().message;
  // Another connection (as the rollup writer's) holds the write lock for a while.
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::thread holder([other] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  });
  controller::ChangeSet changes;
  changes.tenants.push_back({"t-1", "alice", from_unix_ms(5)});
  const Status committed = (*store)->commit(changes);
  holder.join();
  sqlite3_close(other);
  ASSERT_TRUE(committed) << committed.error().message;
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot);
  ASSERT_EQ(snapshot->tenants.size(), 1u);
  EXPECT_EQ(snapshot->tenants[0].name, "alice");
}

TEST_F(SqliteStoreTest, MembersRowsWrittenWholeByEarlierVersionsComeBackTheSame) {
  model::Job job = job_with_tasks("j-old", 2);
  job.spec.nodes = 2;
  job.spec.task.name = "j-old";
  const auto members = gang_members(job);
  {
    auto store = open_sqlite_store(path_);
    ASSERT_TRUE(store) << store.error().message;
    controller::ChangeSet changes;
    changes.jobs.push_back(job);
    changes.jobs.back().tasks.clear();
    for (const auto& task : job.tasks) changes.job_tasks.push_back({job.id, task});
    ASSERT_TRUE((*store)->commit(changes));
  }
  {  // schema 10's rows: whole instances, spec and platform variables included
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    for (const auto& member : members) {
      const std::string sql = fmt::format("INSERT INTO instances VALUES ('{}', 't-1', '{}')",
                                          member.id, model::instance_json(member));
      ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    }
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=10", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = open_sqlite_store(path_);
  ASSERT_TRUE(store) << store.error().message;
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  ASSERT_EQ(snapshot->instances.size(), members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    EXPECT_EQ(Json(snapshot->instances[i]), Json(members[i])) << members[i].id;
  }
}

TEST_F(SqliteStoreTest, ASchemaVersion2DatabaseHasItsJobTasksMovedIntoRows) {
  {  // the layout before job_tasks: the tasks in the job's body
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    model::Job job = job_with_tasks("j-old", 2);
    job.tasks[0].state = model::JobState::kSucceeded;
    job.tasks[0].exit_code = 0;
    job.tasks[0].attempts = 1;
    const std::string sql = fmt::format(
        "CREATE TABLE tenants (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);"
        "CREATE TABLE api_keys (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);"
        "CREATE TABLE join_tokens (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT "
        "NULL);"
        "CREATE TABLE nodes (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);"
        "CREATE TABLE instances (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);"
        "CREATE TABLE usage_records (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT "
        "NULL);"
        "CREATE TABLE idempotency_keys (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT "
        "NOT NULL);"
        "CREATE TABLE ledger_transfers (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL "
        "UNIQUE, at_ms INTEGER NOT NULL, from_account TEXT NOT NULL, to_account TEXT NOT NULL, "
        "amount_micros INTEGER NOT NULL, kind TEXT NOT NULL, tenant_id TEXT NOT NULL, reference "
        "TEXT NOT NULL);"
        "CREATE TABLE jobs (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);"
        "CREATE TABLE reservations (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT "
        "NULL);"
        "CREATE TABLE quotas (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, body TEXT NOT NULL);"
        "INSERT INTO jobs VALUES ('j-old', 't-1', '{}');"
        "PRAGMA user_version=2;",
        Json(job).dump());
    char* message = nullptr;
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message), SQLITE_OK)
        << (message ? message : "");
    sqlite3_close(db);
  }
  auto store = open_sqlite_store(path_);
  ASSERT_TRUE(store) << store.error().message;
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  ASSERT_EQ(snapshot->jobs.size(), 1u);
  const auto& tasks = snapshot->jobs[0].tasks;
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].state, model::JobState::kSucceeded);
  EXPECT_EQ(tasks[0].exit_code, 0);
  EXPECT_EQ(tasks[0].attempts, 1);
  EXPECT_EQ(tasks[1].state, model::JobState::kQueued);
  EXPECT_EQ(tasks[1].exit_code, std::nullopt);
  EXPECT_EQ(tasks[1].members, std::vector<std::string>{"i-1"});

  // From now on a task changes alone.
  controller::ChangeSet changed;
  model::JobTask task = tasks[1];
  task.state = model::JobState::kRunning;
  changed.job_tasks.push_back({"j-old", task});
  ASSERT_TRUE((*store)->commit(changed));
  EXPECT_EQ((*store)->load()->jobs[0].tasks[1].state, model::JobState::kRunning);
}

}  // namespace
}  // namespace gpurent::store
