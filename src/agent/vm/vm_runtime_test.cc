// The VM runtime with real VMs under TCG (the test image, scripts/vm-test-image.sh): a run's
// command exits with its status in the console log, its file kept in the instance's directory and
// one written to its volume in the volume's data on the node;
// a sleeping VM survives its runtime, is adopted by a new one on the same directory, runs an exec
// through its guest agent, and stops with SIGTERM's status. With a stand-in QEMU and a fake sysfs:
// a run's GPUs are bound to vfio-pci and given to QEMU with its services' ports, and given back to
// the host when the VM ends or fails to start.
#include "agent/vm/vm_runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "agent/vm/fake_sysfs.h"
#include "agent/vm/guest_agent.h"
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
  EXPECT_EQ(fs::status((*runtime)->instance_dir("i-vm")).permissions() & fs::perms::all,
            fs::perms::owner_all)
      << "no other user of the node reads a VM's disk";
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
  // Exec through the guest agent, as the run's command runs: its env, in /workspace.
  Result<GuestExecResult> ran = fail(Error::internal("not tried"));
  for (int i = 0; i < 20 && !(ran = guest_exec(vm_guest_agent_socket(options_.data_dir, key),
                                               vm_exec_argv({"sh", "-c",
                                                             "echo \"$GREETING in $(pwd)\"; "
                                                             "echo err >&2; exit 5"}),
                                               {}, std::chrono::seconds(30)));
       ++i) {
    ASSERT_EQ(ran.error().code, "guest_agent_unavailable") << ran.error().message;
  }
  ASSERT_TRUE(ran) << ran.error().message;
  EXPECT_EQ(ran->exit_code, 5);
  EXPECT_EQ(ran->out, "it's a VM in /workspace\n");
  EXPECT_EQ(ran->err, "err\n");
  const auto missing = guest_exec(vm_guest_agent_socket(options_.data_dir, key),
                                  vm_exec_argv({"no-such-program"}), {}, std::chrono::seconds(30));
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_EQ(missing->exit_code, 127);
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

// A stand-in for qemu-system-x86_64 (the machine is a sleep) and a sysfs with one GPU and its
// audio function in an IOMMU group of their own.
class VmPassthroughTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path("/tmp") / ("gvp-" + std::to_string(os_random_seed() % 1'000'000));
    fs::create_directories(dir_);
    // Records its arguments and daemonizes a sleeping stand-in for the machine.
    write_script("qemu", R"(out="$(dirname "$0")/args"; printf '%s\n' "$@" > "$out"
while [ $# -gt 0 ]; do [ "$1" = -pidfile ] && pidfile="$2"; shift; done
sleep 600 </dev/null >/dev/null 2>&1 &
echo $! > "$pidfile")");
    write_script("broken-qemu", "echo 'vfio 0000:3b:00.0: group 42 is not viable' >&2; exit 1");
    sysfs_.add(kGpu, 42, "0x030200", "nvidia");
    sysfs_.add("0000:3b:00.1", 42, "0x040300", "snd_hda_intel");
    sysfs_.add("0000:5e:00.0", 43, "0x030200", "nvidia");
    sysfs_.add("0000:5f:00.0", 43, "0x020000", "mlx5_core");
    model::Gpu gpu;
    gpu.uuid = "GPU-a";
    gpu.pci_address = kGpu;
    model::Gpu shared = gpu;
    shared.uuid = "GPU-shared";
    shared.pci_address = "0000:5e:00.0";
    options_ = {.data_dir = dir_ / "data",
                .instances_dir = dir_ / "instances",
                .kernel = dir_ / "vmlinuz",
                .gpus = {gpu, shared},
                .sysfs = sysfs_.root(),
                .qemu = (dir_ / "qemu").string(),
                .stop_grace = std::chrono::seconds(5)};
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write_script(const std::string& name, const std::string& body) {
    FakeSysfsTree::write(dir_ / name, "#!/bin/sh\n" + body + "\n");
    fs::permissions(dir_ / name, fs::perms::owner_all);
  }
  std::string driver_override() const {
    return FakeSysfsTree::read(sysfs_.root() / "bus" / "pci" / "devices" / kGpu /
                               "driver_override");
  }
  static model::WorkloadSpec gpu_spec(std::string gpu) {
    model::WorkloadSpec s;
    s.instance_id = "i-gpu";
    s.run = 1;
    s.command = {"nvidia-smi"};
    s.gpus = {std::move(gpu)};
    s.env = {{"GPURENT_PORT_WEB", "18080"}};
    return s;
  }

  static constexpr const char* kGpu = "0000:3b:00.0";
  fs::path dir_;
  FakeSysfsTree sysfs_;
  VmRuntimeOptions options_;
};

TEST_F(VmPassthroughTest, AGpuIsBoundForTheVmAndGivenBackWhenItEnds) {
  auto runtime = VmRuntime::open(options_);
  ASSERT_TRUE(runtime) << runtime.error().message;
  ASSERT_TRUE((*runtime)->start(gpu_spec("GPU-a")));
  EXPECT_EQ(driver_override(), "vfio-pci");
  const std::string args = read_file(dir_ / "args").value_or("");
  EXPECT_NE(args.find("vfio-pci,host=0000:3b:00.0\n"), std::string::npos) << args;
  EXPECT_NE(args.find("vfio-pci,host=0000:3b:00.1\n"), std::string::npos) << args;
  EXPECT_NE(args.find("hostfwd=tcp:127.0.0.1:18080-:18080"), std::string::npos) << args;

  const WorkloadKey key{"i-gpu", 1};
  (*runtime)->stop(key);
  const Workload* ended = nullptr;
  for (int i = 0; i < 200 && ended == nullptr; ++i) {
    (*runtime)->poll();
    const Workload* w = (*runtime)->find(key);
    if (w->phase == model::WorkloadPhase::kExited) ended = w;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(ended, nullptr);
  EXPECT_EQ(ended->exit_code, 143);
  EXPECT_EQ(driver_override(), "\n") << "given back to the host's driver";
  EXPECT_EQ(FakeSysfsTree::read(sysfs_.root() / "bus" / "pci" / "drivers_probe"), "0000:3b:00.1");
}

TEST_F(VmPassthroughTest, AGpuThatCannotPassOrAVmThatFailsLeavesNothingBound) {
  auto runtime = VmRuntime::open(options_);
  ASSERT_TRUE(runtime);
  EXPECT_EQ((*runtime)->start(gpu_spec("GPU-unknown")).error().code, "gpu_passthrough_unavailable");
  EXPECT_EQ((*runtime)->start(gpu_spec("GPU-shared")).error().code, "iommu_group_shared");
  EXPECT_EQ(driver_override(), "(null)\n");

  options_.qemu = (dir_ / "broken-qemu").string();
  auto broken = VmRuntime::open(options_);
  ASSERT_TRUE(broken);
  const auto refused = (*broken)->start(gpu_spec("GPU-a"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "vm_start_failed");
  EXPECT_NE(refused.error().message.find("not viable"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(driver_override(), "\n") << "bound for the start, given back when it failed";
  EXPECT_TRUE((*broken)->workloads().empty());
  EXPECT_FALSE(fs::exists(options_.data_dir / "vms" / "i-gpu.1"));
}

}  // namespace
}  // namespace gpurent::agent
