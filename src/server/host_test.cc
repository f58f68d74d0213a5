#include "server/host.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace gpurent::server {
namespace {

using std::chrono::milliseconds;

class NullStore final : public store::Store {
 public:
  Result<controller::Snapshot> load() override { return controller::Snapshot{}; }
  Status commit(const controller::ChangeSet&) override { return {}; }
};

// A store whose commits wait until release().
class GatedStore final : public store::Store {
 public:
  Result<controller::Snapshot> load() override { return controller::Snapshot{}; }
  Status commit(const controller::ChangeSet&) override {
    std::unique_lock lock(mutex_);
    released_cv_.wait(lock, [this] { return released_; });
    ++commits_;
    return {};
  }
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

class ControllerHostTest : public testing::Test {
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
  EXPECT_EQ(controller_.silence_counted_from(), from_unix_ms(1'005'000));
}

TEST_F(ControllerHostTest, TicksOnTimeForgiveNothing) {
  ControllerHost host(io_, controller_, store_);
  host.start(milliseconds(10), milliseconds(2'000));
  asio::post(io_, [this] { clock_.advance(Millis(5'000)); });
  io_.run_for(milliseconds(200));
  host.stop();
  EXPECT_EQ(controller_.silence_counted_from(), Timestamp{});
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
          return c.bootstrap_admin(hash_secret("key"), "gpr_key", 0).has_value();
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

TEST_F(ControllerHostTest, ACommandThatChangesNothingWaitsOnlyForWhatIsInFlight) {
  GatedStore store;
  ControllerHost host(io_, controller_, store);
  std::atomic<int> batches = 0;
  host.set_after_commit([&](const controller::ChangeSet&) { ++batches; });
  host.start(milliseconds(60'000));
  const auto read_only = [](controller::Controller& c) { return c.silence_counted_from(); };
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
    return c.bootstrap_admin(hash_secret("key"), "gpr_key", 0).has_value();
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

}  // namespace
}  // namespace gpurent::server
