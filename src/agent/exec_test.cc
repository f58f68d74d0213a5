#include "agent/exec.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "agent/files.h"
#include "agent/test_util.h"
#include "common/json.h"

namespace gpurent::agent {
namespace {

using testing::TempDir;

class ExecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.path() / "home");
    const Json launch = {{"command", {"sleep", "infinity"}},
                         {"env", {{"PATH", "/usr/bin:/bin"}, {"GREETING", "hello"}}},
                         {"cwd", (dir_.path() / "home").string()}};
    ASSERT_TRUE(write_file_atomic(dir_.path() / "launch.json", launch.dump()));
  }

  // Runs the command and collects its frames (all of them, or the first `limit`).
  std::vector<model::ExecFrame> run(std::vector<std::string> command, int timeout_s = 30,
                                    size_t limit = SIZE_MAX) {
    boost::asio::io_context io;
    auto started = start_exec(io, dir_.path(), {std::move(command), timeout_s});
    EXPECT_TRUE(started) << started.error().message;
    if (!started) return {};
    EXPECT_EQ(started->content_type, "application/x-ndjson");
    std::optional<net::Response> response = std::move(*started);
    std::vector<model::ExecFrame> frames;
    model::ExecFrameReader reader;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          while (frames.size() < limit) {
            auto piece = co_await response->chunks();
            if (!piece) break;
            auto more = reader.feed(*piece);
            EXPECT_TRUE(more);
            if (more) frames.insert(frames.end(), more->begin(), more->end());
          }
          if (frames.size() >= limit) {
            // Before it leaves, the command gets time to fill what may be queued for the client.
            boost::asio::steady_timer pause(io, std::chrono::milliseconds(300));
            co_await pause.async_wait(boost::asio::use_awaitable);
          }
          response.reset();  // the client leaves
        },
        boost::asio::detached);
    io.run();
    return frames;
  }

  static std::string joined(const std::vector<model::ExecFrame>& frames,
                            model::ExecFrame::Kind kind) {
    std::string out;
    for (const auto& frame : frames) {
      if (frame.kind == kind) out += frame.data;
    }
    return out;
  }

  TempDir dir_;
};

TEST_F(ExecTest, StreamsBothOutputsAndEndsWithTheExitStatus) {
  const auto frames = run({"sh", "-c", "echo out; echo err >&2; echo $GREETING; pwd; exit 3"});
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(joined(frames, model::ExecFrame::Kind::kStdout),
            "out\nhello\n" + (dir_.path() / "home").string() + "\n");
  EXPECT_EQ(joined(frames, model::ExecFrame::Kind::kStderr), "err\n");
  EXPECT_EQ(frames.back().kind, model::ExecFrame::Kind::kExit);
  EXPECT_EQ(frames.back().exit_code, 3);
  EXPECT_TRUE(frames.back().error.empty());
}

TEST_F(ExecTest, ASignalIsReportedAs128PlusItsNumber) {
  const auto frames = run({"sh", "-c", "kill -TERM $$"});
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().exit_code, 128 + SIGTERM);
}

TEST_F(ExecTest, TheTimeoutKillsTheCommandAndSaysSo) {
  const auto started = std::chrono::steady_clock::now();
  const auto frames = run({"sleep", "30"}, 1);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().exit_code, model::kExecTimedOutCode);
  EXPECT_NE(frames.back().error.find("timeout"), std::string::npos);
}

TEST_F(ExecTest, AClientThatLeavesTakesTheCommandWithIt) {
  const auto frames = run({"sh", "-c", "echo $$; exec sleep 30"}, 30, 1);
  ASSERT_EQ(frames.size(), 1u);
  const pid_t pid = std::stoi(frames[0].data);
  EXPECT_NE(::kill(pid, 0), 0);  // killed and reaped
  EXPECT_EQ(errno, ESRCH);
}

TEST_F(ExecTest, AClientThatLeavesWhileOutputIsHeldBackReleasesEverything) {
  // Far more output than is queued for a client: the readers wait for room when it leaves.
  const auto frames = run({"sh", "-c", "while :; do head -c 1000000 /dev/zero; done"}, 30, 1);
  EXPECT_EQ(frames.size(), 1u);  // and run() returned: no reader or timer was left waiting
}

TEST_F(ExecTest, LargeOutputArrivesWhole) {
  const auto frames = run({"sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' a"});
  EXPECT_EQ(joined(frames, model::ExecFrame::Kind::kStdout), std::string(3'000'000, 'a'));
  EXPECT_EQ(frames.back().exit_code, 0);
}

TEST_F(ExecTest, AProgramNotOnThePathIsRefusedBeforeAnythingRuns) {
  boost::asio::io_context io;
  const auto refused = start_exec(io, dir_.path(), {{"no-such-program-here"}, 5});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "command_not_found");
  EXPECT_EQ(resolve_program("sh", "/nonexistent:/bin"), "/bin/sh");
  EXPECT_EQ(resolve_program("./x", "/bin"), "./x");
  EXPECT_EQ(resolve_program("sh", "/nonexistent"), std::nullopt);
}

TEST_F(ExecTest, ARunWithoutALaunchRecordCannotExec) {
  boost::asio::io_context io;
  EXPECT_FALSE(start_exec(io, dir_.path() / "missing", {{"true"}, 5}));
}

}  // namespace
}  // namespace gpurent::agent
