#include <gtest/gtest.h>

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "common/random.h"
#include "controller/controller.h"
#include "model/codec.h"
#include "store/store.h"

namespace gpurent::store {
namespace {

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

model::Transfer transfer(std::string id, Micros amount) {
  return {std::move(id),
          from_unix_ms(1000),
          "external:topups",
          "tenant:t-1:cash",
          amount,
          model::TransferKind::kTopup,
          "t-1",
          "note"};
}

TEST_F(SqliteStoreTest, CommitsAreDurableAcrossReopenAndUpsertByIdKeepsTheLatest) {
  {
    auto store = open_sqlite_store(path_);
    ASSERT_TRUE(store) << store.error().message;
    controller::ChangeSet changes;
    changes.tenants.push_back({"t-1", "alice", from_unix_ms(5)});
    changes.tenants.push_back({"t-1", "alice-renamed", from_unix_ms(5)});
    changes.transfers.push_back(transfer("topup:1", 700));
    changes.transfers.push_back(transfer("topup:2", 300));
    ASSERT_TRUE((*store)->commit(changes));
  }
  auto store = open_sqlite_store(path_);
  ASSERT_TRUE(store);
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  ASSERT_EQ(snapshot->tenants.size(), 1u);
  EXPECT_EQ(snapshot->tenants[0].name, "alice-renamed");
  ASSERT_EQ(snapshot->transfers.size(), 2u);
  EXPECT_EQ(snapshot->transfers[0].id, "topup:1");
  EXPECT_EQ(snapshot->transfers[0].amount, 700);
  EXPECT_EQ(snapshot->transfers[1].reference, "note");
}

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

// How many tenants another connection sees committed.
int committed_tenants(const std::string& path) {
  sqlite3* reader = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &reader, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* count = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(reader, "SELECT count(*) FROM tenants", -1, &count, nullptr),
            SQLITE_OK);
  EXPECT_EQ(sqlite3_step(count), SQLITE_ROW);
  const int tenants = sqlite3_column_int(count, 0);
  sqlite3_finalize(count);
  sqlite3_close(reader);
  return tenants;
}

controller::ChangeSet tenant_change(std::string id) {
  controller::ChangeSet changes;
  changes.tenants.push_back({std::move(id), "someone", from_unix_ms(5)});
  return changes;
}

TEST_F(SqliteStoreTest, StagedChangesAreDurableWithTheNextCommitAndNotBefore) {
  {
    auto store = open_sqlite_store(path_);
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->stage(tenant_change("t-1")));
    ASSERT_TRUE((*store)->stage(tenant_change("t-2")));
    EXPECT_EQ(committed_tenants(path_), 0);
    ASSERT_TRUE((*store)->commit(tenant_change("t-3")));
    EXPECT_EQ(committed_tenants(path_), 3);
    // The next commit is a transaction of its own again.
    ASSERT_TRUE((*store)->commit(tenant_change("t-4")));
  }
  auto store = open_sqlite_store(path_);
  ASSERT_TRUE(store);
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  EXPECT_EQ(snapshot->tenants.size(), 4u);
}

TEST_F(SqliteStoreTest, StagedChangesAreLostWithoutTheirCommitOrWithAFailedOne) {
  {
    auto store = open_sqlite_store(path_);
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->stage(tenant_change("t-1")));
  }  // closed (a crash) with the transaction open
  auto store = open_sqlite_store(path_);
  ASSERT_TRUE(store);
  EXPECT_TRUE((*store)->load()->tenants.empty());

  controller::ChangeSet paid;
  paid.transfers.push_back(transfer("topup:1", 100));
  ASSERT_TRUE((*store)->commit(paid));
  ASSERT_TRUE((*store)->stage(tenant_change("t-2")));
  EXPECT_FALSE((*store)->commit(paid));  // the repeated transfer fails it, and the staged rows
  EXPECT_TRUE((*store)->load()->tenants.empty());
  ASSERT_TRUE((*store)->commit(tenant_change("t-3")));
  const auto snapshot = (*store)->load();
  ASSERT_EQ(snapshot->tenants.size(), 1u);
  EXPECT_EQ(snapshot->tenants[0].id, "t-3");
}

TEST_F(SqliteStoreTest, TemplateChangesApplyInOrderAcrossMergedBatches) {
  const model::Template first{.name = "a", .process_command = {"true"}};
  const model::Template second{.name = "a", .process_command = {"false"}};
  const model::Template gone{.name = "b", .image = "busybox:1"};
  {
    auto store = open_sqlite_store(path_);
    ASSERT_TRUE(store) << store.error().message;
    controller::ChangeSet batch;
    batch.template_changes = {{"a", first}, {"b", gone}};
    controller::ChangeSet later;
    // Deleted, then set again: the last change wins, even inside one merged transaction.
    later.template_changes = {{"a", std::nullopt}, {"b", std::nullopt}, {"a", second}};
    batch.merge(std::move(later));
    ASSERT_TRUE((*store)->commit(batch));
  }
  auto store = open_sqlite_store(path_);
  ASSERT_TRUE(store);
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  ASSERT_EQ(snapshot->templates.size(), 1u);
  EXPECT_EQ(snapshot->templates[0].name, "a");
  EXPECT_EQ(snapshot->templates[0].process_command, std::vector<std::string>{"false"});
}

TEST_F(SqliteStoreTest, ARepeatedTransferIdFailsTheWholeCommit) {
  auto store = open_sqlite_store(path_);
  ASSERT_TRUE(store);
  controller::ChangeSet first;
  first.transfers.push_back(transfer("usage:i-1:1:60", 100));
  ASSERT_TRUE((*store)->commit(first));

  controller::ChangeSet replay;
  replay.tenants.push_back({"t-2", "bob", from_unix_ms(5)});
  replay.transfers.push_back(transfer("usage:i-1:1:60", 100));
  EXPECT_FALSE((*store)->commit(replay));
  auto snapshot = (*store)->load();
  EXPECT_TRUE(snapshot->tenants.empty());  // nothing of the failed commit was written
  EXPECT_EQ(snapshot->transfers.size(), 1u);

  controller::ChangeSet zero;
  zero.transfers.push_back(transfer("zero", 0));
  EXPECT_FALSE((*store)->commit(zero));  // the CHECK constraint guards the ledger too
}

TEST_F(SqliteStoreTest, ControllerStateSurvivesARoundTrip) {
  ManualClock clock(from_unix_ms(1'790'000'000'000));
  controller::Controller ctl(clock, {.seed = 3});
  auto store = open_sqlite_store(path_);
  ASSERT_TRUE(store);
  const auto admin_key =
      ctl.accounts().bootstrap_admin(hash_secret("admin"), "gpr_", 5 * kMicrosPerUnit);
  ASSERT_TRUE(admin_key);
  const auto admin = *ctl.accounts().credentials().authenticate(hash_secret("admin"));
  ASSERT_TRUE(ctl.accounts().credentials().create_join_token(admin, "", std::chrono::hours(1),
                                                             hash_secret("join")));
  model::NodeRegistration registration{.name = "node",
                                       .gpus = {{"GPU-0", 0, "h100-80g", "H100", 81920}},
                                       .cpu_count = 8,
                                       .memory_mb = 1024,
                                       .simulated = true,
                                       .agent_version = "t"};
  const auto node = ctl.register_node(hash_secret("join"), registration, "c", hash_secret("c"));
  ASSERT_TRUE(node);
  model::InstanceSpec spec;
  spec.gpu_types = {"h100-80g"};
  spec.command = {"true"};
  const auto created = ctl.create_instance(admin, spec, "k", "fp");
  ASSERT_TRUE(created) << created.error().message;
  ASSERT_TRUE((*store)->commit(ctl.take_changes()));  // instances as objects
  ASSERT_TRUE(ctl.apply_report(
      node->node_id,
      {2, {{created->instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}}}));
  clock.advance(Millis(61'500));
  ASSERT_TRUE(ctl.apply_report(
      node->node_id,
      {2, {{created->instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}}}));
  ctl.tick();
  ASSERT_TRUE((*store)->commit(
      ctl.take_changes(controller::Controller::Form::kStoreRows)));  // and as serialized rows

  controller::Controller restored(clock, {.seed = 4});
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot);
  ASSERT_TRUE(restored.restore(std::move(*snapshot)));
  const auto* instance = *restored.instances().get(admin, created->instance.id);
  EXPECT_EQ(instance->state, model::InstanceState::kRunning);
  EXPECT_EQ(restored.fleet().placements().holders("GPU-0"),
            std::set<std::string>{created->instance.id});
  EXPECT_EQ(*restored.accounts().balance(admin, admin.tenant_id),
            *ctl.accounts().balance(admin, admin.tenant_id));
  EXPECT_EQ(*restored.accounts().balance(admin, admin.tenant_id), 5 * kMicrosPerUnit - 61 * 5000);
  EXPECT_EQ(restored.metering().usage(admin.tenant_id)[0]->billed_seconds, 61);
  EXPECT_TRUE(restored.create_instance(admin, spec, "k", "fp")->replayed);
  EXPECT_EQ(restored.accounts().ledger_total(), 0);
  EXPECT_EQ(restored.fleet().nodes().authenticate(hash_secret("c")), node->node_id);
  // Generations served before the restart are never reused for a different desired set (a new
  // desired set alone does not rewrite the node's row: see kGenerationsBetweenNodeWrites).
  EXPECT_GE(restored.fleet().desired_state(node->node_id)->generation,
            ctl.fleet().desired_state(node->node_id)->generation +
                controller::kGenerationJumpOnRestore - controller::kGenerationsBetweenNodeWrites);
  EXPECT_EQ(restored.fleet().desired_state(node->node_id)->workloads.size(), 1u);

  // The event log comes back, and the next event continues its sequence.
  clock.advance(Millis(60'000));
  ctl.tick();  // the node has been silent: down
  ASSERT_TRUE((*store)->commit(ctl.take_changes()));
  controller::Controller again(clock, {.seed = 5});
  ASSERT_TRUE(again.restore(std::move(*(*store)->load())));
  const auto events = again.events().list(admin, {}, 10);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0]->seq, 1);
  EXPECT_EQ(events[0]->kind, model::event_kind::kNodeDown);
  EXPECT_EQ(events[0]->object_id, node->node_id);
  EXPECT_EQ(events[1]->kind, model::event_kind::kInstanceMoved);  // off the down node
  EXPECT_EQ(events[1]->object_id, created->instance.id);
  EXPECT_EQ(events[2]->kind, "alert.firing");               // node_heartbeat_lost (monitoring.h)
  ASSERT_TRUE(again.apply_report(node->node_id, {2, {}}));  // back: event 4
  EXPECT_EQ(again.take_changes().events.at(0).seq, 4);
}

TEST_F(SqliteStoreTest, VolumesSurviveAReopenAndTheirMeteringResumesWithoutDoubleCharging) {
  ManualClock clock(from_unix_ms(1'790'000'000'000));
  controller::Controller ctl(clock, {.seed = 3});
  auto store = open_sqlite_store(path_);
  ASSERT_TRUE(store);
  ASSERT_TRUE(ctl.accounts().bootstrap_admin(hash_secret("admin"), "gpr_", 5 * kMicrosPerUnit));
  const auto admin = *ctl.accounts().credentials().authenticate(hash_secret("admin"));
  const auto kept = ctl.volumes().create(admin, {"kept", 100, ""});
  const auto gone = ctl.volumes().create(admin, {"gone", 1, ""});
  ASSERT_TRUE(kept && gone);
  ASSERT_TRUE((*store)->commit(ctl.take_changes()));
  clock.advance(Millis(61'000));
  ctl.tick();
  ASSERT_TRUE(ctl.volumes().remove(admin, gone->volume.id));
  ASSERT_TRUE((*store)->commit(ctl.take_changes()));
  const Micros paid = 5 * kMicrosPerUnit - *ctl.accounts().balance(admin, admin.tenant_id);

  store = open_sqlite_store(path_);  // the server restarts
  ASSERT_TRUE(store);
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  controller::Controller restored(clock, {.seed = 4});
  ASSERT_TRUE(restored.restore(std::move(*snapshot)));
  ASSERT_EQ(restored.volumes().list(admin).size(), 1u);
  const auto* volume = restored.volumes().list(admin)[0];
  EXPECT_EQ(volume->id, kept->volume.id);
  EXPECT_EQ(volume->name, "kept");
  EXPECT_EQ(volume->billed_seconds, 61);
  EXPECT_EQ(restored.volumes().of_tenant(admin.tenant_id).size(),
            2u);  // the deleted one's line too
  EXPECT_EQ(*restored.accounts().balance(admin, admin.tenant_id), 5 * kMicrosPerUnit - paid);

  // Metering goes on from where it stopped: the total is the formula's for all 122 s, and the
  // transfer ids follow on, so the store takes them (a repeated id would fail the commit).
  clock.advance(Millis(61'000));
  restored.tick();
  ASSERT_TRUE((*store)->commit(restored.take_changes()));
  EXPECT_EQ((*restored.volumes().get(admin, kept->volume.id))->charged,
            Micros{50'000'000} * 122 / 2'592'000);
  // The first controller (a stale leader) metering the same seconds again posts the same ids:
  // the store refuses them, so nothing is charged twice.
  ctl.tick();
  EXPECT_FALSE((*store)->commit(ctl.take_changes()));
  EXPECT_EQ(restored.accounts().ledger_total(), 0);
}

model::Job job_with_tasks(const std::string& id, int tasks) {
  model::Job job;
  job.id = id;
  job.tenant_id = "t-1";
  job.spec.task.gpu_types = {"h100-80g"};
  job.spec.task.command = {"true"};
  job.spec.array = tasks;
  job.created_at = from_unix_ms(1000);
  job.revision = 1;
  for (int i = 0; i < tasks; ++i) {
    job.tasks.push_back({i, model::JobState::kQueued, 0, std::nullopt, {fmt::format("i-{}", i)}});
  }
  return job;
}

TEST_F(SqliteStoreTest, JobTasksAreRowsWrittenOneByOneAndComeBackInTheirJob) {
  auto store = open_sqlite_store(path_);
  ASSERT_TRUE(store);
  model::Job job = job_with_tasks("j-1", 3);
  controller::ChangeSet created;
  for (const auto& task : job.tasks) created.job_tasks.push_back({job.id, task});
  created.jobs.push_back(job);
  created.jobs.back().tasks.clear();
  ASSERT_TRUE((*store)->commit(created));

  controller::ChangeSet started;  // only task 1 changes
  model::JobTask task = job.tasks[1];
  task.state = model::JobState::kFailed;
  task.attempts = 2;
  task.exit_code = 3;
  task.members.clear();  // members are kept from the first write
  started.job_tasks.push_back({job.id, task});
  ASSERT_TRUE((*store)->commit(started));

  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  ASSERT_EQ(snapshot->jobs.size(), 1u);
  const auto& tasks = snapshot->jobs[0].tasks;
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(tasks[0].state, model::JobState::kQueued);
  EXPECT_EQ(tasks[0].exit_code, std::nullopt);
  EXPECT_EQ(tasks[1].state, model::JobState::kFailed);
  EXPECT_EQ(tasks[1].attempts, 2);
  EXPECT_EQ(tasks[1].exit_code, 3);
  EXPECT_EQ(tasks[1].members, std::vector<std::string>{"i-1"});
  EXPECT_EQ(tasks[2].members, std::vector<std::string>{"i-2"});

  // A job missing a task row is reported, not restored with a hole.
  controller::ChangeSet partial;
  partial.jobs.push_back(job_with_tasks("j-2", 2));
  partial.jobs.back().tasks.clear();
  partial.job_tasks.push_back({"j-2", job.tasks[0]});
  ASSERT_TRUE((*store)->commit(partial));
  EXPECT_FALSE((*store)->load());
}

// A gang job's members as the controller makes them (create_job, place_members): member
// (0, 0) and (0, 1) placed with their gang's master, member (1, 0) and (1, 1) still queued.
std::vector<model::Instance> gang_members(const model::Job& job) {
  std::vector<model::Instance> members;
  for (int index = 0; index < job.spec.array; ++index) {
    for (int rank = 0; rank < job.spec.nodes; ++rank) {
      model::Instance member;
      member.id = fmt::format("i-{}-{}", index, rank);
      member.tenant_id = job.tenant_id;
      member.spec = model::job_member_spec(job, index, rank);
      member.job_id = job.id;
      member.job_task = index;
      member.job_rank = rank;
      member.created_at = member.queued_at = from_unix_ms(1000);
      member.reason = "waiting for capacity";
      if (index == 0) {
        member.state = model::InstanceState::kRunning;
        member.node_id = fmt::format("n-{}", rank);
        member.gpus = {"GPU-a", "GPU-b"};
        member.gpu_type = "h100-80g";
        member.run = 1;
        member.started_at = from_unix_ms(2000);
        member.placed_generation = 7;
        member.master_address = "10.0.0.1";
        member.master_port = 29501;
      }
      members.push_back(std::move(member));
    }
  }
  return members;
}

TEST_F(SqliteStoreTest, AJobMembersRowLeavesOutWhatItsJobDeterminesAndComesBackWhole) {
  model::Job job = job_with_tasks("j-1", 2);
  job.spec.nodes = 2;
  job.spec.task.name = "train";
  job.spec.task.gpu_count = 2;
  job.spec.task.env = {{"EPOCHS", "3"}};
  const auto members = gang_members(job);
  model::Instance alone = members[0];  // an instance of no job keeps its whole row
  alone.id = "i-alone";
  alone.job_id.clear();
  alone.job_task = -1;
  alone.spec.name = "notebook";

  controller::ChangeSet changes;
  changes.jobs.push_back(job);
  changes.jobs.back().tasks.clear();
  for (const auto& task : job.tasks) changes.job_tasks.push_back({job.id, task});
  for (const auto& member : members) {
    changes.instance_rows.push_back(
        {member.id, member.tenant_id, model::instance_row_json(member)});
  }
  changes.instances.push_back(alone);
  EXPECT_FALSE(Json::parse(changes.instance_rows[0].body).contains("spec"));
  EXPECT_LT(changes.instance_rows[0].body.size() + 200, model::instance_json(members[0]).size());
  EXPECT_EQ(Json::parse(changes.instance_rows[0].body)["master_port"], 29501);
  EXPECT_EQ(Json::parse(changes.instance_rows[2].body)["master_addr"], "");  // not placed
  {
    auto store = open_sqlite_store(path_);
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->commit(changes));
  }
  auto store = open_sqlite_store(path_);
  ASSERT_TRUE(store);
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  ASSERT_EQ(snapshot->instances.size(), members.size() + 1);
  std::map<std::string, model::Instance> loaded;
  for (const auto& instance : snapshot->instances) loaded.emplace(instance.id, instance);
  for (const auto& member : members) EXPECT_EQ(Json(loaded[member.id]), Json(member)) << member.id;
  EXPECT_EQ(Json(loaded["i-alone"]), Json(alone));
  EXPECT_EQ(model::job_member_placement(job, loaded["i-0-1"]).rank, 1);
  EXPECT_EQ(model::job_member_placement(job, loaded["i-0-1"]).master_port, 29501);
  EXPECT_EQ(loaded["i-0-1"].spec.name, "train-0-1");
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

TEST_F(SqliteStoreTest, AMemberRowWithoutItsJobIsCorrupt) {
  model::Job job = job_with_tasks("j-gone", 1);
  auto store = open_sqlite_store(path_);
  ASSERT_TRUE(store);
  const auto member = gang_members(job).front();
  controller::ChangeSet changes;
  changes.instance_rows.push_back({member.id, member.tenant_id, model::instance_row_json(member)});
  ASSERT_TRUE((*store)->commit(changes));
  const auto loaded = (*store)->load();
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("j-gone"), std::string::npos) << loaded.error().message;
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

TEST_F(SqliteStoreTest, PriceVersionsAndABoundedSpotHistoryComeBack) {
  {
    auto store = open_sqlite_store(path_);
    ASSERT_TRUE(store) << store.error().message;
    controller::ChangeSet changes;
    model::PriceVersion first;
    first.version = 1;
    first.gpu_per_hour = {{"h100-80g", 18'000'000}};
    model::PriceVersion second = first;
    second.version = 2;
    second.effective_at = from_unix_ms(5'000);
    second.set_at = from_unix_ms(4'000);
    second.cpu_per_core_hour = 36'000;
    second.minimum_billed_seconds = 0;
    changes.price_versions = {first, second};
    // More points than the bound: the oldest go, as they do in memory.
    for (size_t i = 0; i < billing::kMaxSpotPointsPerType + 5; ++i) {
      changes.spot_prices.push_back({"h100-80g", from_unix_ms(static_cast<int64_t>(i) * 1000),
                                     7'200'000, static_cast<int>(i % 1000)});
    }
    changes.spot_prices.push_back({"a100-80g", from_unix_ms(1000), 5'000'000, 10});
    ASSERT_TRUE((*store)->commit(changes));
  }
  auto store = open_sqlite_store(path_);
  ASSERT_TRUE(store);
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  ASSERT_EQ(snapshot->price_versions.size(), 2u);
  EXPECT_EQ(snapshot->price_versions[1].version, 2);
  EXPECT_EQ(snapshot->price_versions[1].effective_at, from_unix_ms(5'000));
  EXPECT_EQ(snapshot->price_versions[1].cpu_per_core_hour, 36'000);
  EXPECT_EQ(snapshot->price_versions[1].minimum_billed_seconds, 0);
  EXPECT_EQ(snapshot->price_versions[1].gpu_per_hour.at("h100-80g"), 18'000'000);
  ASSERT_EQ(snapshot->spot_prices.size(), billing::kMaxSpotPointsPerType + 1);
  EXPECT_EQ(snapshot->spot_prices.front().gpu_type, "a100-80g");
  EXPECT_EQ(snapshot->spot_prices[1].at, from_unix_ms(5'000));  // h100's first five went
  EXPECT_EQ(snapshot->spot_prices[1].utilisation_permille, 5);
}

}  // namespace
}  // namespace gpurent::store
