#include "agent/runtime/container_runtime.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "agent/runtime/podman_test_env.h"
#include "agent/runtime/volumes.h"
#include "agent/test_util.h"

namespace gpurent::agent {
namespace {

using model::WorkloadPhase;
using testing::eventually;
using testing::PodmanService;
using testing::TempDir;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ContainerRuntimeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { service_ = PodmanService::start(&why_); }
  static void TearDownTestSuite() { service_.reset(); }
  void SetUp() override { ASSERT_TRUE(service_) << why_; }

  std::unique_ptr<ContainerRuntime> open_runtime() {
    auto runtime = ContainerRuntime::open({.data_dir = dir_.path(),
                                           .socket_path = service_->socket_path(),
                                           .stop_grace = std::chrono::seconds(1)});
    EXPECT_TRUE(runtime) << runtime.error().message;
    return runtime ? std::move(*runtime) : nullptr;
  }

  static model::WorkloadSpec shell(std::string instance, std::string script, int64_t run = 1) {
    return {.instance_id = std::move(instance),
            .run = run,
            .image = PodmanService::kImage,
            .command = {"sh", "-c", std::move(script)}};
  }

  // Polls until the run has exited; nullptr if it does not within 30 s.
  static const Workload* wait_exit(ContainerRuntime& runtime, const WorkloadKey& key) {
    const bool done = eventually(
        [&] {
          runtime.poll();
          const auto* workload = runtime.find(key);
          return workload && workload->phase == WorkloadPhase::kExited;
        },
        std::chrono::seconds(30));
    return done ? runtime.find(key) : nullptr;
  }

  static inline std::unique_ptr<PodmanService> service_;
  static inline std::string why_;
  TempDir dir_;
};

TEST_F(ContainerRuntimeTest, RunsInTheImageWithThePlatformEnvironmentAndKeepsTheLog) {
  auto runtime = open_runtime();
  ASSERT_TRUE(runtime);
  auto spec = shell("i-env",
                    "echo out; echo err >&2; echo id=$GPURENT_INSTANCE_ID run=$GPURENT_RUN "
                    "greeting=$GREETING; pwd; echo kept > /workspace/note; exit 4");
  spec.env = {{"GREETING", "hi"}, {"GPURENT_RUN", "spoofed"}};
  spec.cpu = 1;
  spec.memory_gb = 1;
  ASSERT_TRUE(runtime->start(spec));
  const auto again = runtime->start(spec);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind, ErrorKind::kConflict);

  const Workload* done = wait_exit(*runtime, {"i-env", 1});
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(done->exit_code, 4);
  const std::string log = read_file(done->log_path);
  EXPECT_NE(log.find("out\n"), std::string::npos) << log;
  EXPECT_NE(log.find("err\n"), std::string::npos) << log;
  EXPECT_NE(log.find("id=i-env run=1 greeting=hi\n"), std::string::npos) << log;
  EXPECT_NE(log.find("/workspace\n"), std::string::npos) << log;
  // The instance directory is the container's /workspace, and outlives the run.
  EXPECT_EQ(read_file(runtime->instance_dir("i-env") / "note"), "kept\n");
  ASSERT_TRUE(runtime->forget({"i-env", 1}));
  EXPECT_EQ(runtime->find({"i-env", 1}), nullptr);
  EXPECT_TRUE(std::filesystem::exists(runtime->instance_dir("i-env") / "note"));

  // The next run sees the same disk.
  ASSERT_TRUE(runtime->start(shell("i-env", "cat /workspace/note", 2)));
  const Workload* second = wait_exit(*runtime, {"i-env", 2});
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->exit_code, 0);
  EXPECT_EQ(read_file(second->log_path), "kept\n");
}

TEST_F(ContainerRuntimeTest, StopIsSigtermThenSigkillAfterTheGracePeriod) {
  auto runtime = open_runtime();
  ASSERT_TRUE(runtime);
  ASSERT_TRUE(runtime->start(shell(
      "i-polite", "trap 'echo bye; exit 143' TERM; echo up; while true; do sleep 0.1; done")));
  // PID 1 without a handler ignores SIGTERM: only the SIGKILL ends it.
  auto stubborn = shell("i-stubborn", "");
  stubborn.command = {"sleep", "1000"};
  ASSERT_TRUE(runtime->start(stubborn));
  ASSERT_TRUE(eventually(
      [&] {
        runtime->poll();
        return read_file(runtime->find({"i-polite", 1})->log_path).find("up") != std::string::npos;
      },
      std::chrono::seconds(10)));
  runtime->stop({"i-polite", 1});
  runtime->stop({"i-stubborn", 1});
  EXPECT_TRUE(runtime->find({"i-stubborn", 1})->stop_requested);
  ASSERT_TRUE(runtime->next_deadline().has_value());
  const Workload* polite = wait_exit(*runtime, {"i-polite", 1});
  ASSERT_NE(polite, nullptr);
  EXPECT_EQ(polite->exit_code, 143);
  EXPECT_NE(read_file(polite->log_path).find("bye"), std::string::npos);
  const Workload* killed = wait_exit(*runtime, {"i-stubborn", 1});
  ASSERT_NE(killed, nullptr);
  EXPECT_EQ(killed->exit_code, 137);
  // Forgetting a running run is refused; an exited one is removed from the engine too.
  ASSERT_TRUE(runtime->forget({"i-stubborn", 1}));
  auto client = DockerClient::open(service_->socket_path());
  EXPECT_EQ(client->inspect(container_name({"i-stubborn", 1})).error().kind, ErrorKind::kNotFound);
}

TEST_F(ContainerRuntimeTest, ANewRuntimeReadoptsContainersWithoutDuplicatingThemOrTheirLogs) {
  auto first = open_runtime();
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->start(shell("i-adopt", "echo before; sleep 2; echo after; exit 7")));
  ASSERT_TRUE(first->start(shell("i-long", "sleep 1000")));
  ASSERT_TRUE(eventually(
      [&] {
        first->poll();
        return read_file(first->find({"i-adopt", 1})->log_path) == "before\n";
      },
      std::chrono::seconds(10)));
  first.reset();  // the agent restarts

  auto second = open_runtime();
  ASSERT_TRUE(second);
  ASSERT_EQ(second->workloads().size(), 2u);
  EXPECT_EQ(second->find({"i-long", 1})->phase, WorkloadPhase::kRunning);
  const Workload* done = wait_exit(*second, {"i-adopt", 1});
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(done->exit_code, 7);
  EXPECT_EQ(read_file(done->log_path), "before\nafter\n");
  const auto forgotten = second->forget({"i-long", 1});
  ASSERT_FALSE(forgotten);
  EXPECT_EQ(forgotten.error().kind, ErrorKind::kConflict);
  second->stop({"i-long", 1});
  ASSERT_NE(wait_exit(*second, {"i-long", 1}), nullptr);
  ASSERT_TRUE(second->forget({"i-long", 1}));
  ASSERT_TRUE(second->forget({"i-adopt", 1}));
  EXPECT_TRUE(second->workloads().empty());
}

TEST_F(ContainerRuntimeTest, LinesOfOneSecondCopiedOverSeveralPollsComeOnce) {
  auto runtime = open_runtime();
  ASSERT_TRUE(runtime);
  ASSERT_TRUE(runtime->start(
      shell("i-lines", "for i in 1 2 3 4 5 6 7 8; do echo line $i; sleep 0.3; done")));
  const Workload* done = wait_exit(*runtime, {"i-lines", 1});
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(read_file(done->log_path),
            "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\n");
}

// A workload runs hardened (docker_api.h): no new privileges, no NET_RAW or SYS_ADMIN, and still
// writes its /workspace and its volume as root.
TEST_F(ContainerRuntimeTest, WorkloadsRunWithoutNewPrivilegesAndStillWriteTheirFiles) {
  auto runtime = open_runtime();
  ASSERT_TRUE(runtime);
  auto spec = shell("i-hard",
                    "grep -E '^(CapEff|NoNewPrivs):' /proc/self/status; echo w > /workspace/w; "
                    "echo v > /data/v; busybox chown 1000 /data/v && echo done");
  spec.volumes = {{"v-hard", "/data"}};
  ASSERT_TRUE(runtime->start(spec));
  const Workload* done = wait_exit(*runtime, {"i-hard", 1});
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(done->exit_code, 0);
  EXPECT_EQ(read_file(done->log_path), "CapEff:\t00000000000000fb\nNoNewPrivs:\t1\ndone\n");
  EXPECT_EQ(read_file(runtime->instance_dir("i-hard") / "w"), "w\n");
}

// A node whose NVIDIA Container Toolkit is not trusted (container_toolkit.h) runs no container
// with GPUs, saying why; containers without GPUs still run. And a data directory that holds the
// engine's socket cannot be the source of mounts.
TEST_F(ContainerRuntimeTest, GpusAreRefusedWithTheReasonGivenAndForbiddenDataDirsWithTheirs) {
  auto runtime = ContainerRuntime::open({.data_dir = dir_.path(),
                                         .socket_path = service_->socket_path(),
                                         .gpu_refusal = "the toolkit is too old"});
  ASSERT_TRUE(runtime) << runtime.error().message;
  auto gpus = shell("i-gpu", "true");
  gpus.gpus = {"GPU-a"};
  const auto refused = (*runtime)->start(gpus);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "container_gpus_refused");
  EXPECT_EQ(refused.error().message, "the toolkit is too old");
  EXPECT_EQ((*runtime)->find({"i-gpu", 1}), nullptr);
  ASSERT_TRUE((*runtime)->start(shell("i-cpu", "echo ran")));
  const Workload* done = wait_exit(**runtime, {"i-cpu", 1});
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(read_file(done->log_path), "ran\n");

  const auto beside_the_socket =
      ContainerRuntime::open({.data_dir = service_->dir(), .socket_path = service_->socket_path()});
  ASSERT_FALSE(beside_the_socket);
  EXPECT_EQ(beside_the_socket.error().code, "forbidden_mount");
}

TEST_F(ContainerRuntimeTest, SpecsItCannotRunAreRefused) {
  auto runtime = open_runtime();
  ASSERT_TRUE(runtime);
  auto no_image = shell("i-none", "true");
  no_image.image.clear();
  EXPECT_EQ(runtime->start(no_image).error().kind, ErrorKind::kInvalidArgument);
  auto missing = shell("i-missing", "true");
  missing.image = "registry.invalid/gpurent/none:1";
  const auto pulled = runtime->start(missing);
  ASSERT_FALSE(pulled);
  EXPECT_EQ(pulled.error().code, "image_pull_failed");
  EXPECT_EQ(runtime->find({"i-missing", 1}), nullptr);
  // The image's own command.
  auto own = shell("i-own", "");
  own.command.clear();
  ASSERT_TRUE(runtime->start(own));
  const Workload* own_done = wait_exit(*runtime, {"i-own", 1});
  ASSERT_NE(own_done, nullptr);
  EXPECT_EQ(read_file(own_done->log_path), "image default\n");

  auto absent = ContainerRuntime::open(
      {.data_dir = dir_.path(), .socket_path = "/tmp/gpurent-no-such-engine.sock"});
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().code, "engine_unavailable");
}

}  // namespace
}  // namespace gpurent::agent

namespace gpurent::agent {
namespace {

TEST_F(ContainerRuntimeTest, AVolumeIsBindMountedAtItsPathAndKeepsItsDataAcrossRuns) {
  auto runtime = open_runtime();
  ASSERT_TRUE(runtime);
  auto first = shell("i-vol", "echo kept > /data/file; echo \"$GPURENT_VOLUMES\"");
  first.volumes = {{"v-1", "/data"}};
  ASSERT_TRUE(runtime->start(first));
  const Workload* done = wait_exit(*runtime, {"i-vol", 1});
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(done->exit_code, 0) << read_file(done->log_path);
  EXPECT_EQ(read_file(done->log_path), "v-1=/data\n");
  // Written inside the container, stored in the node's volume directory.
  EXPECT_EQ(read_file(volume_dir(dir_.path(), "v-1") / "file"), "kept\n");
  ASSERT_TRUE(runtime->forget({"i-vol", 1}));

  // Another instance, mounting it elsewhere, reads it.
  auto second = shell("i-other", "cat /mnt/shared/file");
  second.volumes = {{"v-1", "/mnt/shared"}};
  ASSERT_TRUE(runtime->start(second));
  done = wait_exit(*runtime, {"i-other", 1});
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(done->exit_code, 0);
  EXPECT_EQ(read_file(done->log_path), "kept\n");
}

}  // namespace
}  // namespace gpurent::agent
