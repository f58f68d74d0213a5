#include "agent/reconciler.h"
#include "agent/runtime/process_runtime.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "agent/fake_server.h"
#include "agent/test_util.h"

namespace gpurent::agent {
namespace {

using model::WorkloadPhase;
using testing::eventually;
using testing::FakeServer;
using testing::TempDir;

model::WorkloadSpec shell(std::string instance_id, std::string script) {
  model::WorkloadSpec spec;
  spec.instance_id = std::move(instance_id);
  spec.run = 1;
  spec.command = {"sh", "-c", std::move(script)};
  return spec;
}

class AgentReconcilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto runtime = ProcessRuntime::open({dir_.path(), "/proc/self/exe", std::chrono::seconds(5)});
    ASSERT_TRUE(runtime);
    runtime_ = std::move(*runtime);
    auto runs = NodeRuns::open(dir_.path());
    ASSERT_TRUE(runs);
    runs_ = std::move(*runs);
    reconciler_ = std::make_unique<Reconciler>(*runtime_, *runs_);
    link_ = std::move(*server_->factory()());
  }

  void want(std::vector<model::WorkloadSpec> workloads) {
    desired_.workloads = std::move(workloads);
    ++desired_.generation;
  }

  // What the agent's reconcile thread does once per tick.
  Status pass() {
    runtime_->poll();
    reconciler_->converge(desired_);
    return reconciler_->sync(*link_, FakeServer::kCredential);
  }

  bool passes_until(const std::function<bool()>& condition) {
    return eventually([&] {
      EXPECT_TRUE(pass());
      return condition();
    });
  }

  bool reported(std::string_view instance_id, WorkloadPhase phase) {
    const auto status = server_->status(instance_id, 1);
    return status && status->phase == phase;
  }

  TempDir dir_;
  std::shared_ptr<FakeServer> server_ = std::make_shared<FakeServer>();
  std::unique_ptr<ProcessRuntime> runtime_;
  std::unique_ptr<NodeRuns> runs_;
  std::unique_ptr<Reconciler> reconciler_;
  std::unique_ptr<ServerLink> link_;
  model::DesiredState desired_{"n-test", 0, {}};
};

TEST_F(AgentReconcilerTest, StartsADesiredRunAndReportsItRunningThenExitedWithItsWholeLog) {
  want({shell("i-a", "echo hello; while [ ! -e release ]; do sleep 0.01; done; echo bye; exit 2")});
  ASSERT_TRUE(passes_until([&] { return server_->log("i-a", 1) == "hello\n"; }));
  EXPECT_TRUE(reported("i-a", WorkloadPhase::kRunning));
  EXPECT_EQ(server_->reports().back().applied_generation, desired_.generation);

  std::ofstream(runtime_->instance_dir("i-a") / "release").put('x');
  ASSERT_TRUE(passes_until([&] { return reported("i-a", WorkloadPhase::kExited); }));
  EXPECT_EQ(server_->status("i-a", 1)->exit_code, 2);
  EXPECT_EQ(server_->log_at_exit("i-a", 1), "hello\nbye\n");
  // An exited run that is still desired is not started again.
  ASSERT_TRUE(pass());
  EXPECT_EQ(runtime_->workloads().size(), 1u);
}

// What the agent found of its container engine and the NVIDIA Container Toolkit goes with every
// report.
TEST_F(AgentReconcilerTest, ReportsTheContainerRuntimeAndTheToolkitItFound) {
  const model::ContainerToolkit old{
      .version = "1.17.7", .gpu_containers = false, .note = "containers get no GPUs here: old"};
  reconciler_->set_container_runtime(false, old);
  ASSERT_TRUE(pass());
  EXPECT_EQ(server_->reports().back().container_runtime, false);
  EXPECT_EQ(server_->reports().back().container_toolkit, old);
  reconciler_->set_container_runtime(true, std::nullopt);
  ASSERT_TRUE(pass());
  EXPECT_EQ(server_->reports().back().container_runtime, true);
  EXPECT_FALSE(server_->reports().back().container_toolkit);
}

TEST_F(AgentReconcilerTest, UploadsALargeLogInBoundedChunksBeforeReportingTheExit) {
  constexpr size_t kBytes = kMaxLogBytesPerRunPerSync + kLogChunkBytes / 2;  // needs two passes
  want({shell("i-big", fmt::format("head -c {} /dev/zero | tr '\\0' x", kBytes))});
  ASSERT_TRUE(passes_until([&] { return reported("i-big", WorkloadPhase::kExited); }));
  EXPECT_EQ(server_->log_at_exit("i-big", 1), std::string(kBytes, 'x'));
  for (size_t size : server_->upload_sizes()) EXPECT_LE(size, kLogChunkBytes);
}

TEST_F(AgentReconcilerTest, StopsARunThatShouldNotRun) {
  want({shell("i-stop", "exec sleep 30")});
  ASSERT_TRUE(passes_until([&] { return reported("i-stop", WorkloadPhase::kRunning); }));
  auto stop = shell("i-stop", "exec sleep 30");
  stop.should_run = false;
  want({stop});
  ASSERT_TRUE(passes_until([&] { return reported("i-stop", WorkloadPhase::kExited); }));
  EXPECT_EQ(server_->status("i-stop", 1)->exit_code, 128 + SIGTERM);
}

TEST_F(AgentReconcilerTest, StopsAnUndesiredRunAndForgetsItOnceItsExitIsReported) {
  want({shell("i-gone", "exec sleep 30")});
  ASSERT_TRUE(passes_until([&] { return reported("i-gone", WorkloadPhase::kRunning); }));
  want({});
  ASSERT_TRUE(passes_until([&] { return reported("i-gone", WorkloadPhase::kExited); }));
  ASSERT_TRUE(pass());
  EXPECT_EQ(runtime_->find({"i-gone", 1}), nullptr);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "workloads" / "i-gone.1"));
  EXPECT_TRUE(server_->reports().back().workloads.empty());
}

TEST_F(AgentReconcilerTest, ReportsARunThatCannotStartAsExitedUntilItIsNoLongerDesired) {
  auto broken = shell("i-broken", "");
  broken.command.clear();
  want({broken});
  ASSERT_TRUE(pass());
  const auto status = server_->status("i-broken", 1);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->phase, WorkloadPhase::kExited);
  EXPECT_EQ(status->exit_code, kStartFailedExitCode);
  EXPECT_NE(status->message.find("empty"), std::string::npos) << status->message;
  want({});
  ASSERT_TRUE(pass());
  EXPECT_TRUE(server_->reports().back().workloads.empty());
}

TEST_F(AgentReconcilerTest, AnUnreachableServerFailsTheSyncAndGetsNoReport) {
  want({shell("i-down", "echo output")});
  server_->set_reachable(false);
  ASSERT_TRUE(eventually([&] {
    runtime_->poll();
    reconciler_->converge(desired_);
    const auto* w = runtime_->find({"i-down", 1});
    return w && w->phase == WorkloadPhase::kExited;
  }));
  const auto synced = reconciler_->sync(*link_, FakeServer::kCredential);
  ASSERT_FALSE(synced);
  EXPECT_EQ(synced.error().kind, ErrorKind::kUnavailable);
  EXPECT_TRUE(server_->reports().empty());
  // The exit waits for the log: reported as still running until it is uploaded.
  EXPECT_EQ(reconciler_->report().workloads.at(0).phase, WorkloadPhase::kRunning);

  server_->set_reachable(true);
  ASSERT_TRUE(pass());
  EXPECT_TRUE(reported("i-down", WorkloadPhase::kExited));
  EXPECT_EQ(server_->log_at_exit("i-down", 1), "output\n");
}

TEST_F(AgentReconcilerTest, ALogTheServerRefusesDoesNotHoldBackTheExit) {
  server_->set_refuse_logs(true);
  want({shell("i-refused", "echo x; exit 1")});
  ASSERT_TRUE(passes_until([&] { return reported("i-refused", WorkloadPhase::kExited); }));
  EXPECT_EQ(server_->status("i-refused", 1)->exit_code, 1);
}

TEST_F(AgentReconcilerTest, AWrongCredentialFailsTheSyncAsUnauthenticated) {
  want({});
  reconciler_->converge(desired_);
  const auto synced = reconciler_->sync(*link_, "gnc_wrong");
  ASSERT_FALSE(synced);
  EXPECT_EQ(synced.error().kind, ErrorKind::kUnauthenticated);
}

}  // namespace
}  // namespace gpurent::agent
