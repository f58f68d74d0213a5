#include "agent/node_agent.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "agent/fake_server.h"
#include "agent/reconciler.h"
#include "agent/runtime/podman_test_env.h"
#include "agent/test_util.h"

namespace gpurent::agent {
namespace {

using model::WorkloadPhase;
using testing::eventually;
using testing::FakeServer;
using testing::TempDir;

class NodeAgentTest : public ::testing::Test {
 protected:
  AgentOptions options(std::string join_token = std::string(FakeServer::kJoinToken)) const {
    AgentOptions options;
    // The fake server ignores the URL; the agent derives its advertised address from it.
    options.server_url = "http://127.0.0.1:9";
    options.join_token = std::move(join_token);
    options.data_dir = dir_.path().string();
    options.sim_gpus = "2xh100-80g";
    options.report_interval = std::chrono::milliseconds(20);
    options.stop_grace = std::chrono::milliseconds(200);
    return options;
  }

  std::unique_ptr<NodeAgent> make_agent(AgentOptions opts) {
    return std::make_unique<NodeAgent>(std::move(opts), server_->factory());
  }

  bool reported(std::string_view instance_id, WorkloadPhase phase) {
    const auto status = server_->status(instance_id, 1);
    return status && status->phase == phase;
  }

  TempDir dir_;
  std::shared_ptr<FakeServer> server_ = std::make_shared<FakeServer>();
};

TEST_F(NodeAgentTest, RegistersOnceAndKeepsItsIdentityForLaterStarts) {
  auto agent = make_agent(options());
  ASSERT_TRUE(agent->start());
  EXPECT_EQ(agent->node_id(), FakeServer::kNodeId);
  const auto registration = server_->registration();
  ASSERT_TRUE(registration);
  EXPECT_EQ(registration->gpus.size(), 2u);
  EXPECT_TRUE(registration->simulated);
  EXPECT_EQ(registration->agent_version, kAgentVersion);
  EXPECT_GT(registration->cpu_count, 0);
  EXPECT_GT(registration->memory_mb, 0);
  EXPECT_FALSE(registration->name.empty());
  EXPECT_EQ(registration->address, "127.0.0.1");  // the local address facing the server
  struct stat info {};
  ASSERT_EQ(::stat((dir_.path() / kIdentityFile).c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  agent->stop();

  auto restarted = make_agent(options(""));  // no join token needed any more
  ASSERT_TRUE(restarted->start());
  EXPECT_EQ(restarted->node_id(), FakeServer::kNodeId);
  EXPECT_EQ(server_->registrations(), 1);
  ASSERT_TRUE(eventually([&] { return !server_->reports().empty(); }));
}

TEST_F(NodeAgentTest, RegistersTopologyFabricGroupLabelsAndFreeDisk) {
  auto opts = options();
  opts.sim_gpus = "4xh100-80g:nvlink=2";
  opts.fabric_group = "ib-3";
  opts.labels = {{"zone", "b"}, {"region", "eu"}};
  opts.advertise_address = "node7.ib.example";
  auto agent = make_agent(std::move(opts));
  ASSERT_TRUE(agent->start());
  const auto registration = server_->registration();
  ASSERT_TRUE(registration);
  EXPECT_EQ(registration->fabric_group, "ib-3");
  EXPECT_EQ(registration->address, "node7.ib.example");
  EXPECT_EQ(registration->labels,
            (std::map<std::string, std::string>{{"region", "eu"}, {"zone", "b"}}));
  EXPECT_GT(registration->disk_gb, 0);  // the temp dir's file system has some room
  ASSERT_EQ(registration->gpus.size(), 4u);
  EXPECT_EQ(registration->gpus[1].nvlink_domain, 0);
  EXPECT_EQ(registration->gpus[2].nvlink_domain, 1);
  EXPECT_EQ(registration->gpus[3].numa_node, 1);
}

TEST_F(NodeAgentTest, StartFailsWhenTheJoinTokenIsRefused) {
  auto agent = make_agent(options("gjt_wrong"));
  const auto started = agent->start();
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().code, "invalid_join_token");
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / kIdentityFile));
}

TEST_F(NodeAgentTest, StartFailsWithoutIdentityOrJoinToken) {
  auto agent = make_agent(options(""));
  const auto started = agent->start();
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().code, "join_token_required");
}

TEST_F(NodeAgentTest, RegistersInTheBackgroundWhenTheServerIsDownAtStart) {
  server_->set_reachable(false);
  auto agent = make_agent(options());
  ASSERT_TRUE(agent->start());
  EXPECT_EQ(agent->node_id(), "");
  server_->set_reachable(true);
  ASSERT_TRUE(eventually([&] { return agent->node_id() == FakeServer::kNodeId; }));
  ASSERT_TRUE(eventually([&] { return !server_->reports().empty(); }));
}

TEST_F(NodeAgentTest, RunsTheDesiredWorkloadAndReportsItsExitAndLog) {
  model::WorkloadSpec spec;
  spec.instance_id = "i-e2e";
  spec.run = 1;
  spec.command = {"sh", "-c", "echo \"gpus=$CUDA_VISIBLE_DEVICES\"; exit 2"};
  spec.gpus = {"GPU-1", "GPU-2"};
  server_->set_desired({spec});
  auto agent = make_agent(options());
  ASSERT_TRUE(agent->start());
  ASSERT_TRUE(eventually([&] { return reported("i-e2e", WorkloadPhase::kExited); }));
  EXPECT_EQ(server_->status("i-e2e", 1)->exit_code, 2);
  EXPECT_EQ(server_->log_at_exit("i-e2e", 1), "gpus=GPU-1,GPU-2\n");
  EXPECT_EQ(server_->reports().back().applied_generation, server_->generation());
}

TEST_F(NodeAgentTest, AnImageWorkloadOnANodeWithoutAContainerEngineFailsToStartWithTheReason) {
  model::WorkloadSpec spec;
  spec.instance_id = "i-image";
  spec.run = 1;
  spec.image = "pytorch/pytorch:2.5.1";
  server_->set_desired({spec});
  auto agent = make_agent(options());
  ASSERT_TRUE(agent->start());
  ASSERT_TRUE(eventually([&] { return reported("i-image", WorkloadPhase::kExited); }));
  EXPECT_EQ(server_->status("i-image", 1)->exit_code, kStartFailedExitCode);
  EXPECT_NE(server_->status("i-image", 1)->message.find("no container engine"), std::string::npos)
      << server_->status("i-image", 1)->message;
}

class NodeAgentWithPodmanTest : public NodeAgentTest {
 protected:
  static void SetUpTestSuite() { service_ = testing::PodmanService::start(&why_); }
  static void TearDownTestSuite() { service_.reset(); }
  void SetUp() override { ASSERT_TRUE(service_) << why_; }
  static inline std::unique_ptr<testing::PodmanService> service_;
  static inline std::string why_;
};

TEST_F(NodeAgentWithPodmanTest, RunsImageWorkloadsInContainersAndTheRestAsProcesses) {
  model::WorkloadSpec process;
  process.instance_id = "i-process";
  process.run = 1;
  process.command = {"sh", "-c", "echo as a process; exit 3"};
  model::WorkloadSpec container;
  container.instance_id = "i-container";
  container.run = 1;
  container.image = testing::PodmanService::kImage;
  container.command = {"sh", "-c", "echo in $(pwd) as $GPURENT_INSTANCE_ID; exit 5"};
  server_->set_desired({process, container});
  auto opts = options();
  opts.container_socket = service_->socket_path();
  auto agent = make_agent(std::move(opts));
  ASSERT_TRUE(agent->start());
  ASSERT_TRUE(eventually(
      [&] {
        return reported("i-process", WorkloadPhase::kExited) &&
               reported("i-container", WorkloadPhase::kExited);
      },
      std::chrono::seconds(30)));
  EXPECT_EQ(server_->status("i-process", 1)->exit_code, 3);
  EXPECT_EQ(server_->log_at_exit("i-process", 1), "as a process\n");
  EXPECT_EQ(server_->status("i-container", 1)->exit_code, 5);
  EXPECT_EQ(server_->log_at_exit("i-container", 1), "in /workspace as i-container\n");
}

TEST_F(NodeAgentTest, ARestartedAgentAdoptsTheRunningWorkloadInsteadOfStartingItAgain) {
  model::WorkloadSpec spec;
  spec.instance_id = "i-keep";
  spec.run = 1;
  spec.command = {"sh", "-c", "echo started; while [ ! -e release ]; do sleep 0.01; done"};
  server_->set_desired({spec});
  auto agent = make_agent(options());
  ASSERT_TRUE(agent->start());
  ASSERT_TRUE(eventually([&] { return reported("i-keep", WorkloadPhase::kRunning); }));
  agent->stop();
  agent.reset();

  auto restarted = make_agent(options(""));
  ASSERT_TRUE(restarted->start());
  std::ofstream(default_instances_dir(dir_.path()) / "i-keep" / "release").put('x');
  ASSERT_TRUE(eventually([&] { return reported("i-keep", WorkloadPhase::kExited); }));
  EXPECT_EQ(server_->status("i-keep", 1)->exit_code, 0);
  EXPECT_EQ(server_->log_at_exit("i-keep", 1), "started\n");
}

TEST_F(NodeAgentTest, StopsAWorkloadTheServerNoLongerWants) {
  model::WorkloadSpec spec;
  spec.instance_id = "i-drop";
  spec.run = 1;
  spec.command = {"sleep", "30"};
  server_->set_desired({spec});
  auto agent = make_agent(options());
  ASSERT_TRUE(agent->start());
  ASSERT_TRUE(eventually([&] { return reported("i-drop", WorkloadPhase::kRunning); }));
  server_->set_desired({});
  ASSERT_TRUE(eventually([&] { return reported("i-drop", WorkloadPhase::kExited); }));
  EXPECT_EQ(server_->status("i-drop", 1)->exit_code, 128 + SIGTERM);
  // Once the exit has been reported, the run is forgotten and leaves the reports.
  ASSERT_TRUE(eventually([&] {
    const auto reports = server_->reports();
    return reports.back().workloads.empty();
  }));
}

TEST_F(NodeAgentTest, StopReturnsPromptlyWhileTheDesiredStateWatchIsOpen) {
  server_->set_keepalive(model::kWatchKeepalive);  // as long as the real server's
  auto agent = make_agent(options());
  ASSERT_TRUE(agent->start());
  // The first state comes at once (the agent knows no generation); the watch then stays open.
  ASSERT_TRUE(eventually([&] { return server_->watching() == 1; }));
  const auto before = std::chrono::steady_clock::now();
  agent->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(2));
  agent.reset();
  // The detached poller ends at the watch's next line; it needs nothing of the agent it came from.
  server_->set_desired({});
  EXPECT_TRUE(eventually([&] { return server_->watching() == 0; }));
}

TEST_F(NodeAgentTest, OneWatchCarriesEveryChangeAndABrokenOneIsOpenedAgain) {
  model::WorkloadSpec spec;
  spec.run = 1;
  spec.command = {"sleep", "30"};
  auto agent = make_agent(options());
  ASSERT_TRUE(agent->start());
  for (const std::string id : {"i-one", "i-two", "i-three"}) {
    spec.instance_id = id;
    server_->set_desired({spec});
    ASSERT_TRUE(eventually([&] { return reported(id, WorkloadPhase::kRunning); })) << id;
  }
  EXPECT_EQ(server_->watches(), 1);
  // The server goes away and comes back: the agent watches again, from the generation it has.
  server_->set_reachable(false);
  ASSERT_TRUE(eventually([&] { return server_->watching() == 0; }));
  server_->set_reachable(true);
  ASSERT_TRUE(eventually([&] { return server_->watching() == 1; }));
  EXPECT_EQ(server_->watches(), 2);
  server_->set_desired({});
  ASSERT_TRUE(eventually([&] { return reported("i-three", WorkloadPhase::kExited); }));
  agent->stop();
}

// Samples every GPU's telemetry in order, across all the reports the server took.
std::map<std::string, std::vector<int64_t>> sample_times(const std::vector<model::NodeReport>& r) {
  std::map<std::string, std::vector<int64_t>> times;
  for (const auto& report : r) {
    for (const auto& sample : report.telemetry.samples) {
      times[sample.uuid].push_back(sample.time_ms);
    }
  }
  return times;
}

TEST_F(NodeAgentTest, TelemetryIsReportedAndABacklogIsReplayedInOrderAfterAnOutage) {
  auto opts = options();
  opts.telemetry_interval = std::chrono::milliseconds(10);
  auto agent = make_agent(opts);
  ASSERT_TRUE(agent->start());
  ASSERT_TRUE(eventually([&] { return sample_times(server_->reports()).size() == 2; }));

  server_->set_reachable(false);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const size_t reports_before = server_->reports().size();
  const int64_t reconnected_ms = to_unix_ms(SystemClock().now());
  server_->set_reachable(true);
  // The samples taken while the server was away arrive after it is back, in one report.
  ASSERT_TRUE(eventually([&] {
    const auto reports = server_->reports();
    for (size_t i = reports_before; i < reports.size(); ++i) {
      const auto& samples = reports[i].telemetry.samples;
      if (samples.size() >= 2 * 20 && samples.front().time_ms < reconnected_ms - 200) return true;
    }
    return false;
  }));
  agent->stop();
  const auto times = sample_times(server_->reports());
  for (const auto& [uuid, series] : times) {
    ASSERT_GT(series.size(), 30u) << uuid;
    for (size_t i = 1; i < series.size(); ++i) {
      EXPECT_LT(series[i - 1], series[i]) << uuid << " sample " << i;  // in order, none twice
    }
  }
  EXPECT_EQ(server_->reports().back().telemetry.dropped, 0);
}

}  // namespace
}  // namespace gpurent::agent
