#include "server/host.h"

#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <thread>

namespace gpurent::server {
namespace {

using std::chrono::milliseconds;

class NullStore final : public store::Store {
 public:
  Result<controller::Snapshot> load() override { return controller::Snapshot{}; }
  Status commit(const controller::ChangeSet&) override { return {}; }
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

}  // namespace
}  // namespace gpurent::server
