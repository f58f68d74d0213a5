#include "store/postgres/leader_lease.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "store/postgres/test_postgres.h"
#include "store/store.h"
#include "store/store_test_util.h"

namespace gpurent::store {
namespace {

using namespace std::chrono_literals;

class LeaderLeaseTest : public testing::Test {
 protected:
  void SetUp() override {
    GPURENT_NEED_POSTGRES();
    postgres_.emplace();
    url_ = postgres_->create("lease");
  }
  LeaderLease lease(const std::string& name, std::chrono::milliseconds ttl = 30s) {
    auto opened = LeaderLease::open(url_, name, "http://" + name, ttl);
    EXPECT_TRUE(opened) << opened.error().message;
    return std::move(*opened);
  }

  std::optional<pg::TestPostgres> postgres_;
  std::string url_;
};

TEST_F(LeaderLeaseTest, OneServerHoldsTheLeaseUntilItResigns) {
  auto a = lease("a");
  auto b = lease("b");
  EXPECT_EQ(*b.leader(), std::nullopt);
  EXPECT_EQ(*a.try_acquire(), 1);
  EXPECT_EQ(*b.try_acquire(), std::nullopt);
  const auto leader = *b.leader();
  ASSERT_TRUE(leader);
  EXPECT_EQ(leader->epoch, 1);
  EXPECT_EQ(leader->holder, "a");
  EXPECT_EQ(leader->url, "http://a");
  EXPECT_TRUE(*a.renew(1));

  ASSERT_TRUE(a.resign(1));
  EXPECT_EQ(*b.try_acquire(), 2);  // at once: no waiting for the lease to run out
  EXPECT_FALSE(*a.renew(1));       // deposed
  EXPECT_EQ((*a.leader())->holder, "b");
}

TEST_F(LeaderLeaseTest, AnExpiredLeaseIsTakenWithTheDatabasesClock) {
  auto a = lease("a", 300ms);
  auto b = lease("b", 300ms);
  ASSERT_EQ(*a.try_acquire(), 1);
  EXPECT_EQ(*b.try_acquire(), std::nullopt);
  std::this_thread::sleep_for(400ms);  // a paused leader renews nothing
  EXPECT_EQ(*b.leader(), std::nullopt);
  EXPECT_EQ(*b.try_acquire(), 2);
  EXPECT_FALSE(*a.renew(1));
}

TEST_F(LeaderLeaseTest, ALeaderWhoseConnectionIsGoneIsReplacedBeforeItsLeaseEnds) {
  auto b = lease("b");
  {
    auto a = lease("a");  // a lease of 30 s
    ASSERT_EQ(*a.try_acquire(), 1);
  }  // killed: its connection closes
  std::optional<int64_t> taken;
  for (int i = 0; i < 100 && !taken; ++i) {  // the server process ends within moments
    taken = *b.try_acquire();
    if (!taken) std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(taken, 2);
}

TEST_F(LeaderLeaseTest, ADeposedLeadersCommitIsRefusedAndWritesNothing) {
  auto a = lease("a");
  auto b = lease("b");
  ASSERT_EQ(*a.try_acquire(), 1);
  auto old_store = open_postgres_store(url_, 1);
  ASSERT_TRUE(old_store) << old_store.error().message;
  ASSERT_TRUE((*old_store)->commit(test::tenant_change("t-before")));

  ASSERT_TRUE(a.resign(1));
  ASSERT_EQ(*b.try_acquire(), 2);
  auto new_store = open_postgres_store(url_, 2);
  ASSERT_TRUE(new_store);

  controller::ChangeSet late = test::tenant_change("t-late");
  late.transfers.push_back(test::transfer("topup:late", 100));
  const auto refused = (*old_store)->commit(late);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "fenced");
  EXPECT_EQ(refused.error().kind, ErrorKind::kUnavailable);
  // Staged pieces of a long command go with the refused commit.
  ASSERT_TRUE((*old_store)->stage(test::tenant_change("t-staged")));
  EXPECT_FALSE((*old_store)->commit(test::tenant_change("t-late-2")));

  ASSERT_TRUE((*new_store)->commit(test::tenant_change("t-after")));
  const auto snapshot = (*new_store)->load();
  ASSERT_TRUE(snapshot);
  std::vector<std::string> tenants;
  for (const auto& tenant : snapshot->tenants) tenants.push_back(tenant.id);
  EXPECT_EQ(tenants, (std::vector<std::string>{"t-before", "t-after"}));
  EXPECT_TRUE(snapshot->transfers.empty());
}

// The same database, for what its servers share besides the lease.
using SharedSecretTest = LeaderLeaseTest;

TEST_F(SharedSecretTest, EveryServerGetsTheFirstSecretStored) {
  auto first = postgres_shared_secret(url_, "session_key", "from-server-a");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, "from-server-a");
  EXPECT_EQ(*postgres_shared_secret(url_, "session_key", "from-server-b"), "from-server-a");
  EXPECT_EQ(*postgres_shared_secret(url_, "other", "x"), "x");
}

TEST_F(SharedSecretTest, AStoredSecretIsReplacedOnlyWhileItIsStillTheOneRead) {
  ASSERT_TRUE(postgres_shared_secret(url_, "session_key", "plain"));
  ASSERT_TRUE(postgres_replace_shared_secret(url_, "session_key", "plain", "sealed:v1:a"));
  // A second server sealing the same plain value at once changes nothing more.
  ASSERT_TRUE(postgres_replace_shared_secret(url_, "session_key", "plain", "sealed:v1:b"));
  EXPECT_EQ(*postgres_shared_secret(url_, "session_key", "other"), "sealed:v1:a");
}

}  // namespace
}  // namespace gpurent::store
