#include "agent/runtime/process_runtime.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>

#include "agent/runtime/volumes.h"
#include "agent/test_util.h"

namespace gpurent::agent {
namespace {

using model::WorkloadPhase;
using testing::eventually;
using testing::TempDir;

using testing::read_text;
using testing::shell;

class ProcessRuntimeTest : public ::testing::Test {
 protected:
  std::unique_ptr<ProcessRuntime> open_runtime(
      std::chrono::milliseconds grace = std::chrono::seconds(5)) {
    // The unit test binary's main serves `__shim`, so /proc/self/exe is a real shim here.
    auto runtime = ProcessRuntime::open({dir_.path(), "/proc/self/exe", grace});
    EXPECT_TRUE(runtime) << runtime.error().message;
    return runtime ? std::move(*runtime) : nullptr;
  }

  // Polls until the run has exited and returns it.
  const Workload* wait_exit(ProcessRuntime& runtime, const WorkloadKey& key) {
    const Workload* exited = testing::exited_run(runtime, key);
    EXPECT_NE(exited, nullptr) << key.instance_id << " did not exit";
    return exited;
  }

  TempDir dir_;
};

TEST_F(ProcessRuntimeTest, RunsToExitCodeZeroAndCapturesStdoutAndStderr) {
  auto runtime = open_runtime();
  ASSERT_TRUE(runtime->start(shell("i-ok", "echo hello; echo oops >&2")));
  const Workload* w = wait_exit(*runtime, {"i-ok", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->exit_code, 0);
  EXPECT_EQ(w->message, "");
  EXPECT_EQ(read_text(w->log_path), "hello\noops\n");
}

TEST_F(ProcessRuntimeTest, ReportsNonZeroExitCode) {
  auto runtime = open_runtime();
  ASSERT_TRUE(runtime->start(shell("i-three", "exit 3")));
  const Workload* w = wait_exit(*runtime, {"i-three", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->exit_code, 3);
}

TEST_F(ProcessRuntimeTest, SetsGpuAndInstanceEnvironment) {
  auto runtime = open_runtime();
  auto spec = shell("i-env",
                    "echo \"$CUDA_VISIBLE_DEVICES|$NVIDIA_VISIBLE_DEVICES|$GPURENT_INSTANCE_ID|"
                    "$GPURENT_RUN|$HOME|$(pwd)|$EPOCHS\"",
                    4);
  spec.gpus = {"GPU-aaaa", "GPU-bbbb"};
  spec.env = {{"EPOCHS", "3"}, {"CUDA_VISIBLE_DEVICES", "tenant cannot pick GPUs"}};
  ASSERT_TRUE(runtime->start(spec));
  const Workload* w = wait_exit(*runtime, {"i-env", 4});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->exit_code, 0);
  const auto home = runtime->instance_dir("i-env").string();
  EXPECT_EQ(read_text(w->log_path),
            fmt::format("GPU-aaaa,GPU-bbbb|GPU-aaaa,GPU-bbbb|i-env|4|{}|{}|3\n", home, home));
}

// A job member's variables come from its placement, over the tenant's own.
TEST_F(ProcessRuntimeTest, GivesAJobMemberTheVariablesOfItsPlacement) {
  auto runtime = open_runtime();
  auto spec =
      shell("i-rank", "echo \"$GPURENT_ARRAY_INDEX|$MASTER_ADDR:$MASTER_PORT|$RANK|$EPOCHS\"");
  spec.env = {{"EPOCHS", "3"}, {"RANK", "tenant cannot pick its rank"}};
  spec.job = model::JobMemberPlacement{.job_id = "j-1",
                                       .index = 5,
                                       .array_size = 6,
                                       .nodes = 2,
                                       .rank = 1,
                                       .gpus_per_node = 8,
                                       .master_address = "10.0.0.7",
                                       .master_port = 29500};
  ASSERT_TRUE(runtime->start(spec));
  const Workload* w = wait_exit(*runtime, {"i-rank", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->exit_code, 0);
  EXPECT_EQ(read_text(w->log_path), "5|10.0.0.7:29500|8|3\n");
}

TEST_F(ProcessRuntimeTest, TheShimsAllocatorSettingDoesNotReachTheWorkload) {
  auto runtime = open_runtime();
  // The workload's parent is its shim.
  ASSERT_TRUE(runtime->start(shell("i-malloc",
                                   "echo \"${MALLOC_CONF-unset}\"; tr '\\0' '\\n' < "
                                   "/proc/$PPID/environ | grep '^MALLOC_CONF='")));
  const Workload* w = wait_exit(*runtime, {"i-malloc", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->exit_code, 0);
  EXPECT_EQ(read_text(w->log_path), "unset\nMALLOC_CONF=thp:never,metadata_thp:disabled\n");
}

TEST_F(ProcessRuntimeTest, HomeAndPathFromTheSpecWin) {
  auto runtime = open_runtime();
  auto spec = shell("i-home", "echo \"$HOME|$PATH\"");
  spec.command[0] = "/bin/sh";  // PATH below does not lead to sh
  spec.env = {{"HOME", "/tmp/elsewhere"}, {"PATH", "/nowhere"}};
  ASSERT_TRUE(runtime->start(spec));
  const Workload* w = wait_exit(*runtime, {"i-home", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(read_text(w->log_path), "/tmp/elsewhere|/nowhere\n");
}

TEST_F(ProcessRuntimeTest, CommandNotFoundExits127WithMessage) {
  auto runtime = open_runtime();
  model::WorkloadSpec spec = shell("i-missing", "");
  spec.command = {"gpurent-no-such-command-anywhere", "--flag"};
  ASSERT_TRUE(runtime->start(spec));
  const Workload* w = wait_exit(*runtime, {"i-missing", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->exit_code, 127);
  EXPECT_NE(w->message.find("cannot execute 'gpurent-no-such-command-anywhere'"), std::string::npos)
      << w->message;
  EXPECT_NE(read_text(w->log_path).find("No such file or directory"), std::string::npos);
}

TEST_F(ProcessRuntimeTest, StopSendsSigtermWhichTheWorkloadHonours) {
  auto runtime = open_runtime(std::chrono::seconds(5));
  model::WorkloadSpec spec = shell("i-term", "");
  spec.command = {"sleep", "30"};
  ASSERT_TRUE(runtime->start(spec));
  ASSERT_EQ(runtime->find({"i-term", 1})->phase, WorkloadPhase::kRunning);
  runtime->stop({"i-term", 1});
  EXPECT_TRUE(runtime->find({"i-term", 1})->stop_requested);
  ASSERT_TRUE(runtime->next_deadline().has_value());
  const Workload* w = wait_exit(*runtime, {"i-term", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->exit_code, 128 + SIGTERM);
  EXPECT_EQ(w->message, "killed by signal SIGTERM");
  EXPECT_FALSE(runtime->next_deadline().has_value());
}

TEST_F(ProcessRuntimeTest, StopEscalatesToSigkillAfterTheGracePeriod) {
  auto runtime = open_runtime(std::chrono::milliseconds(200));
  ASSERT_TRUE(runtime->start(
      shell("i-stubborn", "trap '' TERM; echo trapped; while :; do sleep 0.05; done")));
  const auto log = runtime->find({"i-stubborn", 1})->log_path;
  ASSERT_TRUE(eventually([&] { return read_text(log) == "trapped\n"; }));
  const auto stopped_at = std::chrono::steady_clock::now();
  runtime->stop({"i-stubborn", 1});
  const Workload* w = wait_exit(*runtime, {"i-stubborn", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_GE(std::chrono::steady_clock::now() - stopped_at, std::chrono::milliseconds(200));
  EXPECT_EQ(w->exit_code, 137);
  EXPECT_NE(w->message.find("SIGKILL"), std::string::npos) << w->message;
}

TEST_F(ProcessRuntimeTest, ShimKilledFromOutsideIsReportedAs137) {
  auto runtime = open_runtime();
  model::WorkloadSpec spec = shell("i-vanish", "");
  spec.command = {"sleep", "30"};
  ASSERT_TRUE(runtime->start(spec));
  const auto state = read_shim_state(dir_.path() / "workloads" / "i-vanish.1");
  ASSERT_TRUE(state) << state.error().message;
  ASSERT_EQ(::kill(-state->pid, SIGKILL), 0);
  const Workload* w = wait_exit(*runtime, {"i-vanish", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->exit_code, 137);
  EXPECT_FALSE(w->message.empty());
}

TEST_F(ProcessRuntimeTest, NewRuntimeReadoptsARunningWorkloadAndSeesItsExit) {
  auto first = open_runtime();
  // Exits with 7 once the test creates the file "release" in the instance's directory.
  ASSERT_TRUE(
      first->start(shell("i-adopt", "while [ ! -e release ]; do sleep 0.01; done; exit 7")));
  ASSERT_TRUE(first->start(shell("i-done", "exit 5")));
  ASSERT_NE(wait_exit(*first, {"i-done", 1}), nullptr);

  auto second = open_runtime();  // what an agent restart does
  ASSERT_EQ(second->workloads().size(), 2u);
  const Workload* adopted = second->find({"i-adopt", 1});
  ASSERT_NE(adopted, nullptr);
  EXPECT_EQ(adopted->phase, WorkloadPhase::kRunning);
  const Workload* done = second->find({"i-done", 1});
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(done->phase, WorkloadPhase::kExited);
  EXPECT_EQ(done->exit_code, 5);

  std::ofstream(second->instance_dir("i-adopt") / "release").put('x');
  const Workload* w = wait_exit(*second, {"i-adopt", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->exit_code, 7);
}

TEST_F(ProcessRuntimeTest, NewRuntimeCanStopAnAdoptedWorkload) {
  auto first = open_runtime();
  model::WorkloadSpec spec = shell("i-adopt-stop", "");
  spec.command = {"sleep", "30"};
  ASSERT_TRUE(first->start(spec));
  auto second = open_runtime();
  second->stop({"i-adopt-stop", 1});
  const Workload* w = wait_exit(*second, {"i-adopt-stop", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->exit_code, 128 + SIGTERM);
}

// An agent killed inside start(), before the fork: the run's directory has its launch file (or
// not even that) and no shim ever recorded itself. Nothing ran: the run is not reported (an exit
// would fail the instance and bill it), its debris goes, and the same run can start anew.
TEST_F(ProcessRuntimeTest, ARunWhoseShimNeverStartedIsDroppedNotReportedExited) {
  const auto workloads = dir_.path() / "workloads";
  std::filesystem::create_directories(workloads / "i-cut.1");
  std::ofstream(workloads / "i-cut.1" / "launch.json") << R"({"command": ["true"]})";
  std::filesystem::last_write_time(
      workloads / "i-cut.1" / "launch.json",
      std::filesystem::file_time_type::clock::now() - std::chrono::seconds(60));
  std::filesystem::create_directories(workloads / "i-bare.1");  // cut before the launch file
  // A shim that failed before recording itself left its exit record: that run did end.
  std::filesystem::create_directories(workloads / "i-failed.1");
  ASSERT_TRUE(write_exit_record(workloads / "i-failed.1", {126, "cannot read the launch"}));

  auto runtime = open_runtime();
  ASSERT_EQ(runtime->workloads().size(), 1u);
  const Workload* failed = runtime->find({"i-failed", 1});
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->phase, WorkloadPhase::kExited);
  EXPECT_EQ(failed->exit_code, 126);
  EXPECT_FALSE(std::filesystem::exists(workloads / "i-cut.1"));
  EXPECT_FALSE(std::filesystem::exists(workloads / "i-bare.1"));
  ASSERT_TRUE(runtime->start(shell("i-cut", "exit 3")));
  const Workload* w = wait_exit(*runtime, {"i-cut", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->exit_code, 3);
}

// An agent killed while its shim was starting: the shim records itself after the new agent
// looked. Until the launch is kShimReadyTimeout old the run is starting, then adopted as usual.
TEST_F(ProcessRuntimeTest, AShimThatRecordsItselfAfterTheAdoptionIsAdopted) {
  const auto dir = dir_.path() / "workloads" / "i-late.1";
  {
    auto first = open_runtime();
    model::WorkloadSpec spec = shell("i-late", "");
    spec.command = {"sleep", "30"};
    ASSERT_TRUE(first->start(spec));
  }
  // As if the shim had not recorded itself yet when the agent restarted.
  const std::string state = read_text(dir / "state.json");
  ASSERT_FALSE(state.empty());
  std::filesystem::remove(dir / "state.json");

  auto second = open_runtime();
  const Workload* starting = second->find({"i-late", 1});
  ASSERT_NE(starting, nullptr);
  EXPECT_EQ(starting->phase, WorkloadPhase::kStarting);
  second->stop({"i-late", 1});  // asked before the shim is known: it reaches the shim later
  second->poll();
  EXPECT_EQ(second->find({"i-late", 1})->phase, WorkloadPhase::kStarting);

  std::ofstream(dir / "state.json") << state;
  const Workload* w = wait_exit(*second, {"i-late", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->exit_code, 128 + SIGTERM);
}

TEST_F(ProcessRuntimeTest, ForgetDeletesOnlyExitedRunsAndKeepsTheInstanceDirectory) {
  auto runtime = open_runtime();
  model::WorkloadSpec spec = shell("i-forget", "echo data > file.txt");
  ASSERT_TRUE(runtime->start(spec));
  ASSERT_NE(wait_exit(*runtime, {"i-forget", 1}), nullptr);
  ASSERT_TRUE(runtime->forget({"i-forget", 1}));
  EXPECT_EQ(runtime->find({"i-forget", 1}), nullptr);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "workloads" / "i-forget.1"));
  EXPECT_TRUE(std::filesystem::exists(runtime->instance_dir("i-forget") / "file.txt"));

  spec.command = {"sleep", "30"};
  spec.run = 2;
  ASSERT_TRUE(runtime->start(spec));
  const auto busy = runtime->forget({"i-forget", 2});
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().kind, ErrorKind::kConflict);
  runtime->stop({"i-forget", 2});
  ASSERT_NE(wait_exit(*runtime, {"i-forget", 2}), nullptr);
}

TEST_F(ProcessRuntimeTest, RefusesInvalidSpecsAndDuplicates) {
  auto runtime = open_runtime();
  EXPECT_FALSE(runtime->start(shell("../escape", "true")));
  EXPECT_FALSE(runtime->start(shell("", "true")));
  model::WorkloadSpec empty = shell("i-empty", "");
  empty.command.clear();
  EXPECT_FALSE(runtime->start(empty));
  model::WorkloadSpec bad_env = shell("i-env-bad", "true");
  bad_env.env = {{"A=B", "c"}};
  EXPECT_FALSE(runtime->start(bad_env));
  model::WorkloadSpec image = shell("i-image", "true");
  image.image = "busybox:latest";  // the container runtime's
  const auto refused = runtime->start(image);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kInvalidArgument);
  image.image = "bad image";
  image.command.clear();  // a container may run its image's command, but not a bad image
  EXPECT_FALSE(validate_workload(image));
  image.image = "busybox:latest";
  EXPECT_TRUE(validate_workload(image));

  ASSERT_TRUE(runtime->start(shell("i-dup", "true")));
  const auto again = runtime->start(shell("i-dup", "true"));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind, ErrorKind::kConflict);
  EXPECT_NE(wait_exit(*runtime, {"i-dup", 1}), nullptr);
  EXPECT_EQ(runtime->workloads().size(), 1u);
}

TEST_F(ProcessRuntimeTest, MissingShimExecutableFailsTheStart) {
  auto runtime =
      ProcessRuntime::open({dir_.path(), "/nonexistent/gpurent", std::chrono::seconds(1)});
  ASSERT_TRUE(runtime);
  const auto started = (*runtime)->start(shell("i-noshim", "true"));
  ASSERT_FALSE(started);
  EXPECT_NE(started.error().message.find("/nonexistent/gpurent"), std::string::npos);
  EXPECT_TRUE((*runtime)->workloads().empty());
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "workloads" / "i-noshim.1"));
}

}  // namespace
}  // namespace gpurent::agent

namespace gpurent::agent {
namespace {

TEST_F(ProcessRuntimeTest, AVolumeIsLinkedIntoTheInstanceDirectoryAndKeepsItsDataAcrossRuns) {
  auto runtime = open_runtime();
  auto first = shell("i-vol", "echo kept > data/file; echo \"$GPURENT_VOLUMES\"");
  first.volumes = {{"v-1", "/data"}, {"v-2", "/mnt/deep/scratch"}};
  ASSERT_TRUE(runtime->start(first));
  const Workload* w = wait_exit(*runtime, {"i-vol", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->exit_code, 0) << read_text(w->log_path);
  const auto home = runtime->instance_dir("i-vol");
  const auto data = volume_dir(dir_.path(), "v-1");
  EXPECT_EQ(read_text(w->log_path), fmt::format("v-1={},v-2={}\n", (home / "data").string(),
                                                (home / "mnt/deep/scratch").string()));
  // The data is the volume's, under the node's volumes directory, not the instance's disk.
  EXPECT_EQ(read_text(data / "file"), "kept\n");
  EXPECT_TRUE(std::filesystem::is_symlink(home / "data"));
  EXPECT_TRUE(std::filesystem::is_directory(volume_dir(dir_.path(), "v-2")));
  ASSERT_TRUE(runtime->forget({"i-vol", 1}));

  // The next run (and another instance) sees what the first one wrote.
  auto second = shell("i-vol", "cat data/file", 2);
  second.volumes = {{"v-1", "/data"}};
  ASSERT_TRUE(runtime->start(second));
  w = wait_exit(*runtime, {"i-vol", 2});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(read_text(w->log_path), "kept\n");
  auto other = shell("i-other", "cat shared/file");
  other.volumes = {{"v-1", "/shared"}};
  ASSERT_TRUE(runtime->start(other));
  w = wait_exit(*runtime, {"i-other", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(read_text(w->log_path), "kept\n");
}

TEST_F(ProcessRuntimeTest, AMountPathTakenByTheTenantsOwnFilesFailsTheStartAndTouchesNothing) {
  auto runtime = open_runtime();
  const auto home = runtime->instance_dir("i-taken");
  std::filesystem::create_directories(home / "data");
  std::ofstream(home / "data" / "mine") << "tenant's";
  auto spec = shell("i-taken", "true");
  spec.volumes = {{"v-1", "/data"}};
  const auto started = runtime->start(spec);
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().code, "mount_path_taken");
  EXPECT_EQ(read_text(home / "data" / "mine"), "tenant's");
  EXPECT_EQ(runtime->find({"i-taken", 1}), nullptr);
  // A path the server should never have sent is refused before anything is created.
  spec.volumes = {{"v-1", "/proc/self"}};
  EXPECT_EQ(runtime->start(spec).error().code, "invalid_workload");
  spec.volumes = {{"../escape", "/x"}};
  EXPECT_EQ(runtime->start(spec).error().code, "invalid_workload");
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "escape"));
}

}  // namespace
}  // namespace gpurent::agent
