#include <gtest/gtest.h>

#include <filesystem>

#include "common/random.h"
#include "controller/controller.h"
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
  const auto admin_key = ctl.bootstrap_admin(hash_secret("admin"), "gpr_", 5 * kMicrosPerUnit);
  ASSERT_TRUE(admin_key);
  const auto admin = *ctl.authenticate(hash_secret("admin"));
  ASSERT_TRUE(ctl.create_join_token(admin, "", std::chrono::hours(1), hash_secret("join")));
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
  ASSERT_TRUE((*store)->commit(ctl.take_changes()));
  ASSERT_TRUE(ctl.apply_report(
      node->node_id,
      {2, {{created->instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}}}));
  clock.advance(Millis(61'500));
  ASSERT_TRUE(ctl.apply_report(
      node->node_id,
      {2, {{created->instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}}}));
  ctl.tick();
  ASSERT_TRUE((*store)->commit(ctl.take_changes()));

  controller::Controller restored(clock, {.seed = 4});
  auto snapshot = (*store)->load();
  ASSERT_TRUE(snapshot);
  ASSERT_TRUE(restored.restore(std::move(*snapshot)));
  const auto* instance = *restored.instance(admin, created->instance.id);
  EXPECT_EQ(instance->state, model::InstanceState::kRunning);
  EXPECT_EQ(restored.gpu_holders("GPU-0"), std::vector<std::string>{created->instance.id});
  EXPECT_EQ(*restored.balance(admin, admin.tenant_id), *ctl.balance(admin, admin.tenant_id));
  EXPECT_EQ(*restored.balance(admin, admin.tenant_id), 5 * kMicrosPerUnit - 61 * 5000);
  EXPECT_EQ(restored.usage(admin.tenant_id)[0]->billed_seconds, 61);
  EXPECT_TRUE(restored.create_instance(admin, spec, "k", "fp")->replayed);
  EXPECT_EQ(restored.ledger_total(), 0);
  EXPECT_EQ(restored.authenticate_node(hash_secret("c")), node->node_id);
  // Generations served before the restart are never reused for a different desired set.
  EXPECT_EQ(restored.desired_state(node->node_id)->generation,
            ctl.desired_state(node->node_id)->generation + controller::kGenerationJumpOnRestore);
  EXPECT_EQ(restored.desired_state(node->node_id)->workloads.size(), 1u);
}

}  // namespace
}  // namespace gpurent::store
