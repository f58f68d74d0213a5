// API key scopes (model/scopes.h): what each form grants, what is refused, and how one set is
// held within another.
#include "model/scopes.h"

#include <gtest/gtest.h>

namespace gpurent::model {
namespace {

TEST(ScopesTest, NoScopesIsEverything) {
  const auto all = ScopeSet::parse({});
  ASSERT_TRUE(all);
  EXPECT_TRUE(all->everything());
  EXPECT_TRUE(all->permits(ScopeArea::kNodes, true));
  EXPECT_EQ(all->names(), std::vector<std::string>{"*"});
  EXPECT_EQ(*ScopeSet::parse({"*"}), *all);
}

TEST(ScopesTest, WriteIncludesReadAndAreasStayApart) {
  const auto set = ScopeSet::parse({"instances:write", "billing:read"});
  ASSERT_TRUE(set) << set.error().message;
  EXPECT_TRUE(set->permits(ScopeArea::kInstances, true));
  EXPECT_TRUE(set->permits(ScopeArea::kInstances, false));
  EXPECT_TRUE(set->permits(ScopeArea::kBilling, false));
  EXPECT_FALSE(set->permits(ScopeArea::kBilling, true));
  EXPECT_FALSE(set->permits(ScopeArea::kVolumes, false));
  EXPECT_EQ(set->names(), (std::vector<std::string>{"instances:write", "billing:read"}));
  // The canonical names read back as the same set.
  EXPECT_EQ(*ScopeSet::parse(set->names()), *set);
  EXPECT_EQ(*ScopeSet::parse({"instances:*"}), *ScopeSet::parse({"instances:write"}));
}

TEST(ScopesTest, StarReadReadsEverythingAndWritesNothing) {
  const auto set = ScopeSet::parse({"*:read"});
  ASSERT_TRUE(set);
  for (size_t i = 0; i < kScopeAreaCount; ++i) {
    EXPECT_TRUE(set->permits(static_cast<ScopeArea>(i), false));
    EXPECT_FALSE(set->permits(static_cast<ScopeArea>(i), true));
  }
  EXPECT_EQ(set->names(), std::vector<std::string>{"*:read"});
}

TEST(ScopesTest, UnknownScopesAreRefusedByName) {
  for (const char* bad : {"instance:read", "instances", "instances:delete", "", ":read", "*:"}) {
    const auto parsed = ScopeSet::parse({"jobs:read", bad});
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().code, "invalid_scope");
  }
}

TEST(ScopesTest, ASetIncludesOnlyWhatItGrantsItself) {
  const auto all = *ScopeSet::parse({});
  const auto reads = *ScopeSet::parse({"*:read"});
  const auto instances = *ScopeSet::parse({"instances:write"});
  EXPECT_TRUE(all.includes(reads));
  EXPECT_TRUE(all.includes(instances));
  EXPECT_FALSE(reads.includes(instances));  // writing instances is more than reading them
  EXPECT_TRUE(instances.includes(*ScopeSet::parse({"instances:read"})));
  EXPECT_FALSE(instances.includes(all));
}

}  // namespace
}  // namespace gpurent::model
