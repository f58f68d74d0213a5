#include "server/host.h"
#include "server/test_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "controller/controller_test_fixture.h"

namespace gpurent::server {
namespace {

using std::chrono::milliseconds;

using testing::NullStore;
using testing::RowlessStore;

// A store whose commits wait until release().
class GatedStore final : public RowlessStore {
 public:
  Result<controller::Snapshot> load() override { return controller::Snapshot{}; }
  Status commit(const controller::ChangeSet&) override {
    std::unique_lock lock(mutex_);
    released_cv_.wait(lock, [this] { return released_; });
    ++commits_;
    return {};
  }
  Status stage(const controller::ChangeSet&) override { return {}; }
  void release() {
    {
      std::lock_guard lock(mutex_);
      released_ = true;
    }
    released_cv_.notify_all();
  }
  int commits() {
    std::lock_guard lock(mutex_);
    return commits_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_cv_;
  bool released_ = false;
  int commits_ = 0;
};

class ControllerHostTest : public ::testing::Test {
 protected:
  asio::io_context io_;
  ManualClock clock_{from_unix_ms(1'000'000)};
  controller::Controller controller_{clock_, {}};
  NullStore store_;
};

TEST_F(ControllerHostTest, ALateTickForgivesNodeSilenceUntilThen) {
  ControllerHost host(io_, controller_, store_);
  host.start(milliseconds(10), milliseconds(100));
  // A command that holds the thread for 300 ms, during which the tick is due.
  asio::post(io_, [this] {
    clock_.advance(Millis(5'000));
    std::this_thread::sleep_for(milliseconds(300));
  });
  io_.run_for(milliseconds(400));
  host.stop();
  EXPECT_EQ(controller_.fleet().silence_counted_from(), from_unix_ms(1'005'000));
}

TEST_F(ControllerHostTest, TicksOnTimeForgiveNothing) {
  ControllerHost host(io_, controller_, store_);
  host.start(milliseconds(10), milliseconds(2'000));
  asio::post(io_, [this] { clock_.advance(Millis(5'000)); });
  io_.run_for(milliseconds(200));
  host.stop();
  EXPECT_EQ(controller_.fleet().silence_counted_from(), Timestamp{});
}

TEST_F(ControllerHostTest, DurableWaitsForWhatIsQueuedAndOnlyThen) {
  GatedStore store;
  ControllerHost host(io_, controller_, store);
  std::atomic<int> batches = 0;
  host.set_after_commit([&](const controller::ChangeSet&) { ++batches; });
  host.start(milliseconds(60'000));
  bool created = false, durable = false;
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        created = co_await host.mutate([](controller::Controller& c) {
          return c.accounts().bootstrap_admin(hash_secret("key"), "gpr_key", 0).has_value();
        });
      },
      asio::detached);
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        co_await host.durable();
        durable = true;
      },
      asio::detached);
  io_.run_for(milliseconds(100));
  EXPECT_FALSE(created);  // its commit waits in the store
  EXPECT_FALSE(durable);  // so does everything queued before the barrier
  EXPECT_FALSE(host.all_durable());
  store.release();
  io_.run_for(milliseconds(200));
  EXPECT_TRUE(created);
  EXPECT_TRUE(durable);
  const int after_first = batches;
  EXPECT_GE(after_first, 1);

  // Nothing queued now: a read need not wait for a round trip through the committer.
  EXPECT_TRUE(host.all_durable());
  host.stop();
  EXPECT_EQ(batches, after_first);
  EXPECT_EQ(store.commits(), 1);
}

TEST_F(ControllerHostTest, AppliedCommandsCommitTogetherAndReadsWaitForThem) {
  GatedStore store;
  store.release();
  ControllerHost host(io_, controller_, store);
  host.start(milliseconds(60'000));
  bool durable = false;
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        // A request's command and its audit entry: applied one after the other, committed once.
        EXPECT_TRUE(host.apply([](controller::Controller& c) {
                          return c.accounts().bootstrap_admin(hash_secret("key"), "gpr_key", 0);
                        })
                        .has_value());
        // Applied, not committed: a read that must not reveal uncommitted state waits.
        EXPECT_FALSE(host.all_durable());
        host.apply([](controller::Controller& c) {
          return c.audit().record(model::AuditRecord{.action = "POST /v1/tenants"}).seq;
        });
        co_await host.commit_applied();
        durable = true;
      },
      asio::detached);
  io_.run_for(milliseconds(200));
  EXPECT_TRUE(durable);
  EXPECT_TRUE(host.all_durable());
  EXPECT_EQ(store.commits(), 1);
  host.stop();
}

TEST_F(ControllerHostTest, ACommandThatChangesNothingWaitsOnlyForWhatIsInFlight) {
  GatedStore store;
  ControllerHost host(io_, controller_, store);
  std::atomic<int> batches = 0;
  host.set_after_commit([&](const controller::ChangeSet&) { ++batches; });
  host.start(milliseconds(60'000));
  const auto read_only = [](controller::Controller& c) { return c.fleet().silence_counted_from(); };
  int answered = 0;
  const auto spawn = [&](auto fn) {
    asio::co_spawn(
        io_,
        [&, fn]() -> asio::awaitable<void> {
          co_await host.mutate(fn);
          ++answered;
        },
        asio::detached);
  };
  spawn([](controller::Controller& c) {
    return c.accounts().bootstrap_admin(hash_secret("key"), "gpr_key", 0).has_value();
  });
  spawn(read_only);  // may report what the first created: waits for its commit
  io_.run_for(milliseconds(100));
  EXPECT_EQ(answered, 0);
  store.release();
  io_.run_for(milliseconds(200));
  EXPECT_EQ(answered, 2);
  const int after_first = batches;

  // Nothing in flight: it answers without a batch of its own.
  spawn(read_only);
  io_.run_for(milliseconds(100));
  EXPECT_EQ(answered, 3);
  host.stop();
  EXPECT_EQ(batches, after_first);
  EXPECT_EQ(store.commits(), 1);
}

// A store that counts what it is handed; wait_for_staged() lets a test see the committer at work.
class CountingStore final : public RowlessStore {
 public:
  Result<controller::Snapshot> load() override { return controller::Snapshot{}; }
  Status commit(const controller::ChangeSet& changes) override {
    std::lock_guard lock(mutex_);
    committed_rows_ += changes.instance_rows.size();
    ++commits_;
    return {};
  }
  Status stage(const controller::ChangeSet& changes) override {
    {
      std::lock_guard lock(mutex_);
      staged_rows_ += changes.instance_rows.size();
    }
    staged_cv_.notify_all();
    return {};
  }
  bool wait_for_staged(size_t rows) {
    std::unique_lock lock(mutex_);
    return staged_cv_.wait_for(lock, std::chrono::seconds(5), [&] { return staged_rows_ >= rows; });
  }
  std::tuple<size_t, size_t, int> counts() {
    std::lock_guard lock(mutex_);
    return {staged_rows_, committed_rows_, commits_};
  }

 private:
  std::mutex mutex_;
  std::condition_variable staged_cv_;
  size_t staged_rows_ = 0, committed_rows_ = 0;
  int commits_ = 0;
};

class StreamingHostTest : public controller::ControllerTest {
 protected:
  asio::io_context io_;
};

TEST_F(StreamingHostTest, ALongCommandsRowsAreWrittenWhileItRunsAndCommittedWithIt) {
  CountingStore store;
  ControllerHost host(io_, ctl_, store);
  host.start(milliseconds(60'000), kTickStallThreshold, /*rows_per_piece=*/2);
  bool staged_during_command = false;
  std::optional<std::tuple<size_t, size_t, int>> at_resume;
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        co_await host.mutate([&](controller::Controller& c) {
          model::JobSpec job;
          job.task = spec(1);
          job.array = 4;  // placed at once on the fixture's 8 GPUs: two pieces of two rows
          EXPECT_TRUE(c.create_job(alice_, std::move(job), std::nullopt, ""));
          // Still inside the command: the committer writes its pieces meanwhile.
          staged_during_command = store.wait_for_staged(4);
          return 0;
        });
        at_resume = store.counts();
      },
      asio::detached);
  io_.run_for(milliseconds(500));
  host.stop();
  EXPECT_TRUE(staged_during_command);
  ASSERT_TRUE(at_resume);
  // The command resumed after one commit, which wrote none of the four rows again.
  EXPECT_EQ(*at_resume, std::make_tuple(size_t{4}, size_t{0}, 1));
}

}  // namespace
}  // namespace gpurent::server
