#include "controller/placements.h"

#include <gtest/gtest.h>

#include "controller/component_test_fixture.h"

namespace gpurent::controller {
namespace {

class PlacementsTest : public ComponentTest {
 protected:
  PlacementsTest() { handle_ = add_two_h100s(placements_.cluster(), "n-1"); }

  // An instance of `tenant` on GPU `position` of n-1, taking `milli` of it, allocated in the
  // cluster as the scheduling pass does before it records the instance.
  model::Instance& place(const std::string& id, const std::string& tenant, int position,
                         int milli = sched::kMilliPerGpu) {
    model::Instance& instance = instances_.emplace(id).first->second;
    instance.id = id;
    instance.tenant_id = tenant;
    instance.state = model::InstanceState::kStarting;
    instance.node_id = "n-1";
    instance.gpus = {"GPU-" + std::to_string(position)};
    instance.gpu_type = "h100-80g";
    instance.gpu_milli = milli;
    sched::NodeAssignment part{.node = handle_, .gpus = {position}, .gpu_milli = milli};
    const auto allocated = placements_.cluster().allocate(sched::Assignment{{part}});
    EXPECT_TRUE(allocated) << allocated.error().message;
    placements_.add(instance, part);
    return instance;
  }

  int free_milli(int position) const {
    return placements_.cluster().free_gpu_milli(handle_).at(position);
  }

  Placements placements_{sched::Policy::kBinpack, {reservations_}};
  sched::NodeHandle handle_ = 0;
};

TEST_F(PlacementsTest, APlacedInstanceIsListedOnItsNodeItsGpuAndItsTenantsHolding) {
  place("i-1", "t-1", 0);
  place("i-2", "t-1", 1, 500);

  const auto& on_node = placements_.on_node("n-1");
  ASSERT_EQ(on_node.size(), 2u);
  EXPECT_EQ(on_node.begin()->second, &instances_.at("i-1"));
  EXPECT_EQ(placements_.holders("GPU-0"), std::set<std::string>{"i-1"});
  EXPECT_EQ(placements_.holders("GPU-1"), std::set<std::string>{"i-2"});
  const auto& holding = placements_.holding("t-1");
  EXPECT_EQ(holding.instances, 2);
  EXPECT_EQ(holding.milli, 1'500);
  EXPECT_EQ(holding.milli_of_type("h100-80g"), 1'500);
  EXPECT_EQ(holding.milli_of_type("a100-80g"), 0);
  EXPECT_EQ(placements_.assignment("i-2").nodes.at(0).gpu_milli, 500);
  EXPECT_EQ(placements_.size(), 2u);
  EXPECT_TRUE(placements_.check_invariants(instances_));
}

TEST_F(PlacementsTest, UnknownNodesGpusAndTenantsAreEmptyNotErrors) {
  EXPECT_TRUE(placements_.on_node("n-unknown").empty());
  EXPECT_TRUE(placements_.holders("GPU-unknown").empty());
  EXPECT_EQ(placements_.holding("t-unknown").instances, 0);
  EXPECT_EQ(placements_.holding("t-unknown").milli, 0);
}

TEST_F(PlacementsTest, ASharedGpuListsEveryHolderInIdOrder) {
  place("i-b", "t-2", 0, 500);
  place("i-a", "t-1", 0, 500);
  EXPECT_EQ(placements_.holders("GPU-0"), (std::set<std::string>{"i-a", "i-b"}));
  EXPECT_EQ(free_milli(0), 0);
  EXPECT_TRUE(placements_.check_invariants(instances_));
}

TEST_F(PlacementsTest, RemovingReleasesTheCapacityAndEveryIndexOnce) {
  model::Instance& instance = place("i-1", "t-1", 0);
  EXPECT_EQ(free_milli(0), 0);

  EXPECT_TRUE(placements_.remove(instance));
  EXPECT_EQ(free_milli(0), sched::kMilliPerGpu);
  EXPECT_TRUE(placements_.on_node("n-1").empty());
  EXPECT_TRUE(placements_.holders("GPU-0").empty());
  EXPECT_EQ(placements_.holding("t-1").instances, 0);
  EXPECT_EQ(placements_.holding("t-1").milli, 0);
  EXPECT_EQ(placements_.size(), 0u);
  // A second end of the same run (a replayed report) changes nothing.
  EXPECT_FALSE(placements_.remove(instance));
  EXPECT_EQ(free_milli(0), sched::kMilliPerGpu);
}

TEST_F(PlacementsTest, SpotWorkWithAMaxPriceIsListedForInterruptionWhilePlaced) {
  const auto declare = [this](const std::string& id, model::PricingModel pricing,
                              std::optional<Micros> max_price) {
    auto& spec = instances_.emplace(id).first->second.spec;
    spec.pricing = pricing;
    spec.max_price = max_price;
  };
  declare("i-1", model::PricingModel::kSpot, 2'000'000);
  declare("i-2", model::PricingModel::kSpot, std::nullopt);
  declare("i-3", model::PricingModel::kOnDemand, 2'000'000);  // a max_price means nothing here
  model::Instance& capped = place("i-1", "t-1", 0);
  place("i-2", "t-1", 1, 500);
  place("i-3", "t-2", 1, 500);
  ASSERT_EQ(placements_.with_max_price().size(), 1u);
  EXPECT_EQ(placements_.with_max_price().begin()->second, &capped);
  EXPECT_TRUE(placements_.check_invariants(instances_));
  EXPECT_TRUE(placements_.remove(capped));
  EXPECT_TRUE(placements_.with_max_price().empty());
}

TEST_F(PlacementsTest, RestoreAllocatesAndRefusesCapacityAlreadyTaken) {
  place("i-1", "t-1", 0);
  model::Instance& restored = instances_.emplace("i-2", instances_.at("i-1")).first->second;
  restored.id = "i-2";
  sched::Assignment same{{{.node = handle_, .gpus = {0}}}};
  const auto taken = placements_.restore(restored, same);
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().kind, ErrorKind::kInternal);
  EXPECT_TRUE(placements_.holders("GPU-0") == std::set<std::string>{"i-1"});

  restored.gpus = {"GPU-1"};
  const auto restoring = placements_.restore(restored, {{{.node = handle_, .gpus = {1}}}});
  ASSERT_TRUE(restoring) << restoring.error().message;
  EXPECT_EQ(free_milli(1), 0);
  EXPECT_EQ(placements_.holding("t-1").instances, 2);
  EXPECT_TRUE(placements_.check_invariants(instances_));
}

TEST_F(PlacementsTest, TheInvariantsCatchAnInstanceHoldingGpusUnrecorded) {
  place("i-1", "t-1", 0);
  model::Instance& stray = instances_.emplace("i-2", instances_.at("i-1")).first->second;
  stray.id = "i-2";
  stray.gpus = {"GPU-1"};
  const auto broken = placements_.check_invariants(instances_);
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("i-2 holds GPUs unrecorded"), std::string::npos);
}

}  // namespace
}  // namespace gpurent::controller
