// The VM runtime with real VMs under TCG (the test image, scripts/vm-test-image.sh): a run's
// command exits with its status in the console log, its file kept in the instance's directory and
// one written to its volume in the volume's data on the node;
// a sleeping VM survives its runtime, is adopted by a new one on the same directory, and stops
// with SIGTERM's status; GPUs are refused where they cannot be passed through.
#include "agent/vm/vm_runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "common/files.h"
#include "common/random.h"

namespace gpurent::agent {
namespace {

namespace fs = std::filesystem;

class VmRuntimeTest : public testing::Test {
 protected:
  void SetUp() override {
    const char* image = std::getenv("GPURENT_TEST_VM_IMAGE");
    if (image == nullptr || !fs::exists(fs::path(image) / "vmlinuz")) {
      if (std::getenv("GPURENT_REQUIRE_VM") != nullptr)
        FAIL() << "GPURENT_TEST_VM_IMAGE is not set";
      GTEST_SKIP() << "no VM test image (GPURENT_TEST_VM_IMAGE=$(scripts/vm-test-image.sh))";
    }
    // Short: QMP's unix socket path must fit in 108 bytes.
    dir_ = fs::path("/tmp") / ("gvm-" + std::to_string(os_random_seed() % 1'000'000));
    options_ = {.data_dir = dir_ / "data",
                .instances_dir = dir_ / "instances",
                .kernel = fs::path(image) / "vmlinuz",
                .initrd = fs::path(image) / "initrd.gz",
                .accelerator = VmAccelerator::kTcg,
                .default_memory_mb = 256,
                .stop_grace = std::chrono::seconds(5)};
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  static model::WorkloadSpec spec(std::string id, std::vector<std::string> command) {
    model::WorkloadSpec s;
    s.instance_id = std::move(id);
    s.tenant_id = "t-1";
    s.run = 1;
    s.command = std::move(command);
    s.env = {{"GREETING", "it's a VM"}};
    return s;
  }

  // Polls until the run has exited (a TCG boot takes seconds).
  static const Workload* wait_exited(VmRuntime& runtime, const WorkloadKey& key) {
    for (int i = 0; i < 1200; ++i) {
      runtime.poll();
      const Workload* w = runtime.find(key);
      if (w != nullptr && w->phase == model::WorkloadPhase::kExited) return w;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return nullptr;
  }

  fs::path dir_;
  VmRuntimeOptions options_;
};

TEST_F(VmRuntimeTest, ACommandRunsInItsVmWithItsEnvAndExitsWithItsStatus) {
  auto runtime = VmRuntime::open(options_);
  ASSERT_TRUE(runtime) << runtime.error().message;
  auto s = spec("i-vm", {"sh", "-c",
                         "echo \"$GREETING in $(pwd) as $GPURENT_INSTANCE_ID\"; "
                         "echo kept > /workspace/note; echo \"$GPURENT_VOLUMES\" > "
                         "'/mnt/my data/seen'; exit 7"});
  s.volumes = {{.volume_id = "v-data", .mount_path = "/mnt/my data"}};
  ASSERT_TRUE((*runtime)->start(s));
  EXPECT_EQ((*runtime)->start(s).error().code, "workload_exists");
  const WorkloadKey key{"i-vm", 1};
  const Workload* ended = wait_exited(**runtime, key);
  ASSERT_NE(ended, nullptr) << "the VM did not end";
  EXPECT_EQ(ended->exit_code, 7);
  const std::string log = read_file(ended->log_path).value_or("");
  EXPECT_NE(log.find("it's a VM in /workspace as i-vm"), std::string::npos) << log;
  EXPECT_EQ(read_file((*runtime)->instance_dir("i-vm") / "note").value_or(""), "kept\n");
  EXPECT_EQ(read_file(options_.data_dir / "volumes" / "v-data" / "seen").value_or(""),
            "v-data=/mnt/my data\n")
      << "the volume's data is the node's, mounted at its path in the guest";
  ASSERT_TRUE((*runtime)->forget(key));
  EXPECT_EQ((*runtime)->find(key), nullptr);
  EXPECT_TRUE(fs::exists((*runtime)->instance_dir("i-vm"))) << "the instance keeps its disk";
}

TEST_F(VmRuntimeTest, AVmOutlivesItsRuntimeIsAdoptedAndStops) {
  const WorkloadKey key{"i-sleeper", 1};
  {
    auto first = VmRuntime::open(options_);
    ASSERT_TRUE(first);
    ASSERT_TRUE((*first)->start(spec("i-sleeper", {"sleep", "600"})));
    EXPECT_EQ((*first)->find(key)->phase, model::WorkloadPhase::kRunning);
  }  // the agent restarts: QEMU runs on
  auto second = VmRuntime::open(options_);
  ASSERT_TRUE(second);
  const Workload* adopted = (*second)->find(key);
  ASSERT_NE(adopted, nullptr);
  EXPECT_EQ(adopted->phase, model::WorkloadPhase::kRunning);
  // The guest boots on and runs its command under the new runtime.
  bool booted = false;
  for (int i = 0; i < 1200 && !booted; ++i) {
    (*second)->poll();
    ASSERT_EQ((*second)->find(key)->phase, model::WorkloadPhase::kRunning);
    booted = read_file(adopted->log_path).value_or("").find("GPURENT_BOOTED") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(booted) << read_file(adopted->log_path).value_or("");
  EXPECT_EQ((*second)->forget(key).error().code, "workload_running");
  (*second)->stop(key);
  EXPECT_TRUE((*second)->next_deadline());
  const Workload* stopped = wait_exited(**second, key);
  ASSERT_NE(stopped, nullptr);
  EXPECT_EQ(stopped->exit_code, 143);
  // A third runtime reads the same end from the record.
  auto third = VmRuntime::open(options_);
  ASSERT_TRUE(third);
  EXPECT_EQ((*third)->find(key)->exit_code, 143);
}

TEST_F(VmRuntimeTest, GpusAreRefusedWhereTheyCannotBePassedThrough) {
  auto runtime = VmRuntime::open(options_);
  ASSERT_TRUE(runtime);
  auto s = spec("i-gpu", {"true"});
  s.gpus = {"GPU-1"};
  EXPECT_EQ((*runtime)->start(s).error().code, "gpu_passthrough_unavailable");
  EXPECT_TRUE((*runtime)->workloads().empty());
}

}  // namespace
}  // namespace gpurent::agent
