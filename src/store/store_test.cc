// The store's conformance suite: every test runs on each backend (SQLite, PostgreSQL), through
// the Store interface only. Backend-specific behaviour is tested beside each backend
// (sqlite/sqlite_store_test.cc, postgres/postgres_store_test.cc).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "billing/billing.h"
#include "billing/spot_market.h"
#include "common/json.h"
#include "common/random.h"
#include "controller/controller.h"
#include "model/codec.h"
#include "store/copy.h"
#include "store/postgres/test_postgres.h"
#include "store/store.h"
#include "store/store_test_util.h"

namespace gpurent::store {
namespace {

using namespace test;

enum class Backend { kSqlite, kPostgres };

class StoreTest : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kPostgres) {
      GPURENT_NEED_POSTGRES();
      postgres_.emplace();
    } else {
      dir_ = std::filesystem::temp_directory_path() /
             ("gpurent-store-test-" + std::to_string(os_random_seed()));
      std::filesystem::create_directories(dir_);
    }
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Opens (again) the store called `name`: a database file, or a database of the test server.
  Result<std::unique_ptr<Store>> open(const std::string& name = "state") {
    if (GetParam() == Backend::kSqlite) return open_sqlite_store((dir_ / (name + ".db")).string());
    auto& url = urls_[name];
    if (url.empty()) url = postgres_->create(name);
    return open_postgres_store(url);
  }
  std::unique_ptr<Store> open_ok(const std::string& name) {
    auto store = open(name);
    EXPECT_TRUE(store) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }
  // How many tenants another connection sees committed.
  size_t committed_tenants() {
    auto other = open();
    EXPECT_TRUE(other) << other.error().message;
    auto snapshot = (*other)->load();
    EXPECT_TRUE(snapshot) << snapshot.error().message;
    return snapshot->tenants.size();
  }

  std::filesystem::path dir_;
  std::optional<pg::TestPostgres> postgres_;
  std::map<std::string, std::string> urls_;
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, testing::Values(Backend::kSqlite, Backend::kPostgres),
                         [](const auto& info) {
                           return info.param == Backend::kSqlite ? "Sqlite" : "Postgres";
                         });

TEST_P(StoreTest, CommitsAreDurableAcrossReopenAndUpsertByIdKeepsTheLatest) {
  {
    auto store = open();
    ASSERT_TRUE(store) << store.error().message;
    controller::ChangeSet changes;
    changes.tenants.push_back({"t-1", "alice", from_unix_ms(5)});
    changes.tenants.push_back({"t-1", "alice-renamed", from_unix_ms(5)});
    changes.transfers.push_back(transfer("topup:1", 700));
    changes.transfers.push_back(transfer("topup:2", 300));
    ASSERT_TRUE((*store)->commit(changes));
  }
  auto store = open();
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

TEST_P(StoreTest, GpuBenchmarkHistoriesAreUpsertedByGpuAndComeBackWhole) {
  model::GpuBenchmarkHistory history{
      .id = "GPU-a", .node_id = "n-1", .gpu_type = "h100-80g", .gpu_index = 3, .runs = {}};
  model::BenchmarkRun run{.at = from_unix_ms(1'790'000'000'000),
                          .reason = model::BenchmarkReason::kJoin,
                          .simulated = false,
                          .figures = {.index = 3,
                                      .uuid = "GPU-a",
                                      .gemm_gflops = {{"bf16", 701'300}, {"fp32", 51'000}},
                                      .memory_mbps = 3'010'000,
                                      .h2d_mbps = 51'000,
                                      .d2h_mbps = 50'200},
                          .peers = {{.from = 3, .to = 2, .mbps = 360'100}}};
  {
    auto store = open();
    ASSERT_TRUE(store) << store.error().message;
    controller::ChangeSet changes;
    history.runs.push_back(run);
    changes.gpu_benchmarks.push_back(history);
    run.reason = model::BenchmarkReason::kOperator;
    history.runs.push_back(run);
    changes.gpu_benchmarks.push_back(history);  // the same GPU again: its latest history stays
    ASSERT_TRUE((*store)->commit(changes));
  }
  auto store = open();
  ASSERT_TRUE(store);
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  ASSERT_EQ(snapshot->gpu_benchmarks.size(), 1u);
  EXPECT_EQ(Json(snapshot->gpu_benchmarks[0]), Json(history));
  EXPECT_EQ(snapshot->gpu_benchmarks[0].runs[1].reason, model::BenchmarkReason::kOperator);
}

TEST_P(StoreTest, StagedChangesAreDurableWithTheNextCommitAndNotBefore) {
  {
    auto store = open();
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->stage(tenant_change("t-1")));
    ASSERT_TRUE((*store)->stage(tenant_change("t-2")));
    EXPECT_EQ(committed_tenants(), 0);
    ASSERT_TRUE((*store)->commit(tenant_change("t-3")));
    EXPECT_EQ(committed_tenants(), 3);
    // The next commit is a transaction of its own again.
    ASSERT_TRUE((*store)->commit(tenant_change("t-4")));
  }
  auto store = open();
  ASSERT_TRUE(store);
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  EXPECT_EQ(snapshot->tenants.size(), 4u);
}

TEST_P(StoreTest, StagedChangesAreLostWithoutTheirCommitOrWithAFailedOne) {
  {
    auto store = open();
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->stage(tenant_change("t-1")));
  }  // closed (a crash) with the transaction open
  auto store = open();
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

TEST_P(StoreTest, TemplateChangesApplyInOrderAcrossMergedBatches) {
  const model::Template first{.name = "a", .process_command = {"true"}};
  const model::Template second{.name = "a", .process_command = {"false"}};
  const model::Template gone{.name = "b", .image = "busybox:1"};
  {
    auto store = open();
    ASSERT_TRUE(store) << store.error().message;
    controller::ChangeSet batch;
    batch.template_changes = {{"a", first}, {"b", gone}};
    controller::ChangeSet later;
    // Deleted, then set again: the last change wins, even inside one merged transaction.
    later.template_changes = {{"a", std::nullopt}, {"b", std::nullopt}, {"a", second}};
    batch.merge(std::move(later));
    ASSERT_TRUE((*store)->commit(batch));
  }
  auto store = open();
  ASSERT_TRUE(store);
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  ASSERT_EQ(snapshot->templates.size(), 1u);
  EXPECT_EQ(snapshot->templates[0].name, "a");
  EXPECT_EQ(snapshot->templates[0].process_command, std::vector<std::string>{"false"});
}

TEST_P(StoreTest, ARepeatedTransferIdFailsTheWholeCommit) {
  auto store = open();
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

TEST_P(StoreTest, ControllerStateSurvivesARoundTrip) {
  ManualClock clock(from_unix_ms(1'790'000'000'000));
  controller::Controller ctl(clock, {.seed = 3});
  auto store = open();
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
  const auto first_commit = (*store)->commit(ctl.take_changes());  // instances as objects
  ASSERT_TRUE(first_commit) << first_commit.error().message;
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

TEST_P(StoreTest, VolumesSurviveAReopenAndTheirMeteringResumesWithoutDoubleCharging) {
  ManualClock clock(from_unix_ms(1'790'000'000'000));
  controller::Controller ctl(clock, {.seed = 3});
  auto store = open();
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

  store = open();  // the server restarts
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

TEST_P(StoreTest, JobTasksAreRowsWrittenOneByOneAndComeBackInTheirJob) {
  auto store = open();
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

TEST_P(StoreTest, AJobMembersRowLeavesOutWhatItsJobDeterminesAndComesBackWhole) {
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
    auto store = open();
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->commit(changes));
  }
  auto store = open();
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

TEST_P(StoreTest, AMemberRowWithoutItsJobIsCorrupt) {
  model::Job job = job_with_tasks("j-gone", 1);
  auto store = open();
  ASSERT_TRUE(store);
  const auto member = gang_members(job).front();
  controller::ChangeSet changes;
  changes.instance_rows.push_back({member.id, member.tenant_id, model::instance_row_json(member)});
  ASSERT_TRUE((*store)->commit(changes));
  const auto loaded = (*store)->load();
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("j-gone"), std::string::npos) << loaded.error().message;
}

TEST_P(StoreTest, PriceVersionsAndABoundedSpotHistoryComeBack) {
  {
    auto store = open();
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
  auto store = open();
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

TEST_P(StoreTest, MonitoringRowsAndEventsFromOutsideComeBack) {
  controller::ChangeSet changes;
  const auto rollup = [](std::string gpu, int64_t bucket, double max) {
    return monitor::RollupRow{.gpu_uuid = std::move(gpu),
                              .metric = monitor::Metric::kGpuTemp,
                              .resolution = monitor::Resolution::kMinute,
                              .bucket_start_ms = bucket,
                              .min = 0.1,
                              .max = max,
                              .sum = 1.0 / 3,
                              .count = 3};
  };
  auto& monitoring = changes.monitoring_changes;
  monitoring.rollups = {rollup("GPU-old", 1'000, 50), rollup("GPU-a", 120'000, 70.25)};
  monitoring.rule_changes = {
      {"hot", monitor::Rule{.name = "hot",
                            .signal = {monitor::SignalKind::kGpuMetric, monitor::Metric::kGpuTemp},
                            .comparison = monitor::Comparison::kGt,
                            .threshold = 80,
                            .for_ms = 10'000,
                            .severity = monitor::Severity::kCritical}},
      {"gone", std::nullopt}};
  const monitor::Transition firing{.rule = "hot",
                                   .severity = monitor::Severity::kCritical,
                                   .from = monitor::AlertState::kPending,
                                   .to = monitor::AlertState::kFiring,
                                   .at_ms = 5'000};
  monitoring.alert_history = {{.seq = 1, .transition = firing}, {.seq = 2, .transition = firing}};
  monitoring.acknowledged = {
      {.seq = 2, .transition = firing, .ack = controller::AlertAck{.by = "k-1", .at_ms = 6'000}}};
  // A node's text may be any bytes: invalid UTF-8 and NUL come back replaced, not refused.
  changes.events.push_back({.seq = 1,
                            .at = from_unix_ms(7'000),
                            .tenant_id = "t-1",
                            .object_id = "i-1",
                            .kind = "instance.failed",
                            .message = std::string("exit \xff\0 reason", 14)});
  // An audit entry's path is a request's: any bytes, made clean the same way.
  changes.audit.push_back({.seq = 1,
                           .at = from_unix_ms(8'000),
                           .tenant_id = "t-1",
                           .key_id = "k-1",
                           .role = "tenant-member",
                           .address = "198.51.100.4",
                           .action = "DELETE /v1/volumes/{id}",
                           .target = std::string("/v1/volumes/v\xfe\0x", 16),
                           .status = 404,
                           .outcome = "volume_not_found"});
  {
    auto store = open();
    ASSERT_TRUE(store) << store.error().message;
    auto committed = (*store)->commit(changes);
    ASSERT_TRUE(committed) << committed.error().message;
    controller::ChangeSet pruned;
    pruned.monitoring_changes.prune = controller::RollupPrune{.minute_before_ms = 60'000};
    ASSERT_TRUE((*store)->commit(pruned));
  }
  auto store = open();
  ASSERT_TRUE(store);
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  EXPECT_EQ(snapshot->monitoring.rollups, std::vector{rollup("GPU-a", 120'000, 70.25)});
  ASSERT_EQ(snapshot->monitoring.alert_rules.size(), 1u);
  EXPECT_EQ(snapshot->monitoring.alert_rules[0].threshold, 80);
  ASSERT_EQ(snapshot->monitoring.alert_history.size(), 2u);
  EXPECT_FALSE(snapshot->monitoring.alert_history[0].ack);
  ASSERT_TRUE(snapshot->monitoring.alert_history[1].ack);
  EXPECT_EQ(snapshot->monitoring.alert_history[1].ack->by, "k-1");
  EXPECT_EQ(snapshot->monitoring.alert_history[1].transition.to, monitor::AlertState::kFiring);
  ASSERT_EQ(snapshot->events.size(), 1u);
  const std::string message = snapshot->events[0].message;
  EXPECT_TRUE(message.starts_with("exit ")) << message;
  EXPECT_TRUE(message.ends_with(" reason")) << message;
  EXPECT_EQ(message.find('\xff'), std::string::npos);
  ASSERT_EQ(snapshot->audit.size(), 1u);
  const model::AuditRecord& entry = snapshot->audit[0];
  EXPECT_EQ(entry.at, from_unix_ms(8'000));
  EXPECT_EQ(entry.action, "DELETE /v1/volumes/{id}");
  EXPECT_EQ(entry.status, 404);
  EXPECT_EQ(entry.outcome, "volume_not_found");
  EXPECT_TRUE(entry.target.starts_with("/v1/volumes/v")) << entry.target;
  EXPECT_EQ(entry.target.find('\xfe'), std::string::npos);
  EXPECT_EQ(entry.target.find('\0'), std::string::npos);
}

TEST_P(StoreTest, ACopyHoldsEveryRowAndGoesOnlyIntoAnEmptyStore) {
  auto from = open_ok("from");
  ASSERT_TRUE(from);
  controller::ChangeSet changes;
  changes.tenants.push_back({"t-1", "alice", from_unix_ms(5)});
  changes.transfers.push_back(transfer("topup:1", 700));
  model::Job job = job_with_tasks("j-1", 2);
  for (const auto& task : job.tasks) changes.job_tasks.push_back({job.id, task});
  changes.jobs.push_back(job);
  changes.jobs.back().tasks.clear();
  // More events than a snapshot holds would not fit in a test; every one is copied.
  for (int64_t seq = 1; seq <= 3; ++seq) {
    changes.events.push_back({.seq = seq, .at = from_unix_ms(seq), .kind = "node.down"});
  }
  changes.monitoring_changes.rollups.push_back({.gpu_uuid = "GPU-1", .count = 1});
  ASSERT_TRUE(from->commit(changes));

  // Into the other backend's store when there is one, else into the same kind.
  const std::string copy_path = (std::filesystem::temp_directory_path() /
                                 ("gpurent-copy-" + std::to_string(os_random_seed()) + ".db"))
                                    .string();
  auto to = open_sqlite_store(copy_path);
  ASSERT_TRUE(to) << to.error().message;
  auto report = copy_store(*from, **to);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->tenants, 1u);
  EXPECT_EQ(report->transfers, 1u);
  EXPECT_EQ(report->events, 3u);
  const auto a = from->load();
  const auto b = (*to)->load();
  ASSERT_TRUE(a && b) << (b ? "" : b.error().message);
  EXPECT_EQ(Json(b->tenants), Json(a->tenants));
  EXPECT_EQ(Json(b->jobs), Json(a->jobs));
  EXPECT_EQ(b->events.size(), 3u);
  EXPECT_EQ(b->monitoring.rollups, a->monitoring.rollups);
  ASSERT_EQ(b->transfers.size(), 1u);
  EXPECT_EQ(b->transfers[0].amount, 700);

  const auto again = copy_store(*from, **to);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, "store_not_empty");
  std::filesystem::remove(copy_path);
}

model::UsageRecord record(std::string instance, model::UsageKind kind) {
  model::UsageRecord usage;
  usage.instance_id = std::move(instance);
  usage.run = 3;
  usage.kind = kind;
  usage.id = usage.instance_id + "/3" + (kind == model::UsageKind::kRun ? "" : "/disk");
  usage.tenant_id = "t-tenant-with-a-long-id";
  usage.gpu_type = "h100-80g";
  usage.gpu_count = 2;
  usage.cpu = 8;
  usage.disk_gb = 100;
  usage.started_at = from_unix_ms(1'790'000'000'000);
  usage.metered_until = usage.started_at;
  return usage;
}

// What metering does to a record's fields: all of them move.
void advance(model::UsageRecord& usage, int64_t seconds, Micros due) {
  usage.metered_until += Millis(seconds * 1000 + 7);
  usage.billed_seconds += seconds;
  usage.charged += due;
  usage.price_per_gpu_hour = 18'000'000 + seconds;
  usage.segment_rate = 123'456 + seconds;
  usage.segment_seconds += seconds;
  usage.segment_charged += due;
  usage.package_seconds += 5;
}

void expect_same_transfers(const std::vector<model::Transfer>& a,
                           const std::vector<model::Transfer>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id) << i;
    EXPECT_EQ(a[i].at, b[i].at) << i;
    EXPECT_EQ(a[i].from_account, b[i].from_account) << i;
    EXPECT_EQ(a[i].to_account, b[i].to_account) << i;
    EXPECT_EQ(a[i].amount, b[i].amount) << i;
    EXPECT_EQ(a[i].kind, b[i].kind) << i;
    EXPECT_EQ(a[i].tenant_id, b[i].tenant_id) << i;
    EXPECT_EQ(a[i].reference, b[i].reference) << i;
  }
}

std::vector<Json> as_json(const std::vector<model::UsageRecord>& records) {
  std::vector<Json> out;
  for (const auto& usage : records) out.push_back(Json(usage));
  return out;
}

TEST_P(StoreTest, PackedChargesAndRecordsReadBackAsTheWholeFormsWrote) {
  auto whole = open_ok("whole");
  auto packed = open_ok("packed");
  std::vector<model::UsageRecord> records = {record("i-first-instance-id", model::UsageKind::kRun),
                                             record("i-second-instance", model::UsageKind::kRun),
                                             record("i-stopped", model::UsageKind::kStoppedDisk)};
  controller::ChangeSet opened;
  opened.usage = records;
  ASSERT_TRUE(whole->commit(opened));
  ASSERT_TRUE(packed->commit(opened));

  for (int tick = 1; tick <= 2; ++tick) {
    controller::ChangeSet old_path;
    controller::ChangeSet new_path;
    for (auto& usage : records) {
      const Micros due = 1'000 * tick + usage.run;
      advance(usage, 60, due);
      old_path.usage.push_back(usage);
      old_path.transfers.push_back(billing::usage_transfer(usage, due));
      new_path.add_usage_charge(usage, due);
      new_path.add_metered_usage(usage);
    }
    expect_same_transfers(new_path.all_transfers(), old_path.transfers);
    ASSERT_TRUE(whole->commit(old_path));
    ASSERT_TRUE(packed->commit(new_path));
  }

  const auto a = whole->load();
  const auto b = packed->load();
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->transfers.size(), 6u);
  EXPECT_EQ(a->transfers[0].id, "usage:i-first-instance-id:3:60");
  EXPECT_EQ(a->transfers[2].id, "storage:i-stopped:3:60");
  expect_same_transfers(b->transfers, a->transfers);
  EXPECT_EQ(as_json(b->usage), as_json(a->usage));
  EXPECT_EQ(as_json(b->usage), as_json(records));
}

TEST_P(StoreTest, WholeAndPackedRowsKeepTheirOrderAcrossMergedBatches) {
  auto store = open_ok("order");
  model::UsageRecord opened_earlier = record("i-earlier", model::UsageKind::kRun);
  controller::ChangeSet setup;
  setup.usage.push_back(opened_earlier);
  ASSERT_TRUE(store->commit(setup));

  const auto topup = [](std::string id) {
    return model::Transfer{.id = std::move(id),
                           .at = from_unix_ms(1'000),
                           .from_account = "external:topups",
                           .to_account = "tenant:t-tenant-with-a-long-id:cash",
                           .amount = 10,
                           .kind = model::TransferKind::kTopup,
                           .tenant_id = "t-tenant-with-a-long-id",
                           .reference = ""};
  };
  // Batch 1: a top-up, a charge, a top-up; the earlier record only metered.
  controller::ChangeSet batch;
  batch.transfers.push_back(topup("topup:1"));
  advance(opened_earlier, 60, 100);
  batch.add_usage_charge(opened_earlier, 100);
  batch.add_metered_usage(opened_earlier);
  batch.transfers.push_back(topup("topup:2"));
  // Batch 2: a record opens (whole); another charge, then a top-up; the earlier record closes
  // (whole), after batch 1 metered it.
  controller::ChangeSet later;
  model::UsageRecord opened_now = record("i-now", model::UsageKind::kRun);
  later.usage.push_back(opened_now);
  advance(opened_earlier, 30, 50);
  later.add_usage_charge(opened_earlier, 50);
  opened_earlier.ended_at = opened_earlier.metered_until;
  later.usage.push_back(opened_earlier);
  later.transfers.push_back(topup("topup:3"));
  // Batch 3: the new record metered after it opened.
  controller::ChangeSet last;
  advance(opened_now, 60, 70);
  last.add_metered_usage(opened_now);
  batch.merge(std::move(later));
  batch.merge(std::move(last));

  const auto posted = batch.all_transfers();
  std::vector<std::string> ids;
  for (const auto& t : posted) ids.push_back(t.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"topup:1", "usage:i-earlier:3:60", "topup:2",
                                           "usage:i-earlier:3:90", "topup:3"}));
  ASSERT_TRUE(store->commit(batch));
  const auto snapshot = store->load();
  ASSERT_TRUE(snapshot);
  expect_same_transfers(snapshot->transfers, posted);
  ASSERT_EQ(snapshot->usage.size(), 2u);
  EXPECT_EQ(Json(snapshot->usage[0]), Json(opened_earlier));  // closed: the whole row won
  EXPECT_EQ(Json(snapshot->usage[1]), Json(opened_now));      // opened, then metered
}

TEST_P(StoreTest, APackedRowForARecordTheStoreLacksFailsTheCommit) {
  auto store = open_ok("missing");
  controller::ChangeSet changes;
  changes.tenants.push_back({"t-1", "alice", from_unix_ms(5)});
  changes.add_metered_usage(record("i-never-stored", model::UsageKind::kRun));
  EXPECT_FALSE(store->commit(changes));
  EXPECT_TRUE(store->load()->tenants.empty());  // nothing of it was written
}

TEST_P(StoreTest, ARepeatedPackedChargeFailsTheCommitAsAWholeOneDoes) {
  auto store = open_ok("repeat");
  model::UsageRecord usage = record("i-1", model::UsageKind::kRun);
  controller::ChangeSet opened;
  opened.usage.push_back(usage);
  ASSERT_TRUE(store->commit(opened));
  advance(usage, 60, 100);
  controller::ChangeSet charged;
  charged.add_usage_charge(usage, 100);
  ASSERT_TRUE(store->commit(charged));
  EXPECT_FALSE(store->commit(charged));
  controller::ChangeSet whole;
  whole.transfers.push_back(billing::usage_transfer(usage, 100));
  EXPECT_FALSE(store->commit(whole));
  EXPECT_EQ(store->load()->transfers.size(), 1u);
}

}  // namespace
}  // namespace gpurent::store
