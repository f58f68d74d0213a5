#include "sched/placement.h"

#include <gtest/gtest.h>

namespace gpurent::sched {
namespace {

TEST(BestFit, PicksTheNodeWithFewestFreeGpusThatFits) {
  const std::vector<NodeCapacity> view = {
      {"n-a", "h100-80g", {{"a0", 0}, {"a1", 1}, {"a2", 2}, {"a3", 3}}},
      {"n-b", "h100-80g", {{"b5", 5}, {"b2", 2}}},
      {"n-c", "h100-80g", {{"c0", 0}}},
  };
  const auto placement = best_fit(view, {"h100-80g", 2});
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->node_id, "n-b");
  EXPECT_EQ(placement->gpus, (std::vector<std::string>{"b2", "b5"}));
}

TEST(BestFit, IgnoresOtherTypesAndRefusesWhenNothingFits) {
  const std::vector<NodeCapacity> view = {
      {"n-a", "a100-80g", {{"a0", 0}, {"a1", 1}}},
      {"n-b", "h100-80g", {{"b0", 0}}},
  };
  EXPECT_FALSE(best_fit(view, {"h100-80g", 2}));
  EXPECT_FALSE(best_fit(view, {"h100-80g", 0}));
  const auto placement = best_fit(view, {"a100-80g", 2});
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->node_id, "n-a");
}

TEST(BestFit, BreaksTiesByNodeIdWhateverTheViewOrder) {
  const std::vector<NodeCapacity> view = {
      {"n-z", "h100-80g", {{"z0", 0}}},
      {"n-m", "h100-80g", {{"m0", 0}}},
  };
  EXPECT_EQ(best_fit(view, {"h100-80g", 1})->node_id, "n-m");
}

}  // namespace
}  // namespace gpurent::sched
