#include "common/pointer_set.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpurent {
namespace {

TEST(PointerSetTest, InsertsOnceAndGrowsAndClears) {
  std::vector<int> values(10'000);
  PointerSet set;
  EXPECT_FALSE(set.contains(&values[0]));
  for (auto& v : values) EXPECT_TRUE(set.insert(&v));
  for (auto& v : values) EXPECT_FALSE(set.insert(&v));
  EXPECT_EQ(set.size(), values.size());
  for (auto& v : values) EXPECT_TRUE(set.contains(&v));
  int other = 0;
  EXPECT_FALSE(set.contains(&other));
  set.clear();
  EXPECT_EQ(set.size(), 0u);
  EXPECT_FALSE(set.contains(&values[5]));
  EXPECT_TRUE(set.insert(&values[5]));
  EXPECT_EQ(set.size(), 1u);
}

}  // namespace
}  // namespace gpurent
