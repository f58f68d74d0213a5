// What the agent says about VMs: the accelerator it falls back to or insists on, and whether the
// GPUs pass through (simulated ones always; real ones only under KVM, each in a group of its own).
#include "agent/vm/vm_host.h"

#include <gtest/gtest.h>

#include "agent/vm/fake_sysfs.h"

namespace gpurent::agent {
namespace {

const std::filesystem::path kNoKvm = "/nonexistent/kvm";

std::vector<model::Gpu> one_gpu() {
  model::Gpu gpu;
  gpu.uuid = "GPU-a";
  gpu.pci_address = "0000:3b:00.0";
  return {gpu};
}

TEST(VmHost, WithoutKvmAutoFallsBackToTcgAndKvmRefusesToStart) {
  FakeSysfsTree sysfs;
  const auto fallback =
      detect_vm_host(VmAcceleratorChoice::kAuto, one_gpu(), true, kNoKvm, sysfs.root());
  ASSERT_TRUE(fallback) << fallback.error().message;
  EXPECT_EQ(fallback->accelerator, VmAccelerator::kTcg);
  EXPECT_EQ(fallback->capability.accelerator, "tcg");
  EXPECT_TRUE(fallback->capability.gpu_passthrough) << "simulated GPUs are not bound";
  EXPECT_NE(fallback->capability.note.find("/nonexistent/kvm"), std::string::npos)
      << fallback->capability.note;

  const auto insisted =
      detect_vm_host(VmAcceleratorChoice::kKvm, one_gpu(), true, kNoKvm, sysfs.root());
  ASSERT_FALSE(insisted);
  EXPECT_EQ(insisted.error().code, "kvm_unavailable");

  // A file that is not the KVM device fails the probe's ioctl, not just its open.
  const auto not_kvm = probe_kvm(sysfs.root() / "bus" / "pci" / "drivers_probe");
  ASSERT_FALSE(not_kvm);
  EXPECT_EQ(not_kvm.error().code, "kvm_unavailable");
}

TEST(VmHost, RealGpusPassOnlyUnderKvm) {
  FakeSysfsTree sysfs;
  sysfs.add("0000:3b:00.0", 42, "0x030200", "nvidia");
  const auto tcg =
      detect_vm_host(VmAcceleratorChoice::kTcg, one_gpu(), false, kNoKvm, sysfs.root());
  ASSERT_TRUE(tcg);
  EXPECT_EQ(tcg->accelerator, VmAccelerator::kTcg);
  EXPECT_FALSE(tcg->capability.gpu_passthrough);
  EXPECT_NE(tcg->capability.note.find("only under KVM"), std::string::npos) << tcg->capability.note;
  EXPECT_NE(tcg->capability.note.find("--vm-accelerator tcg"), std::string::npos)
      << tcg->capability.note;
}

TEST(VmHost, AGpuSharingItsGroupIsNamedWhereKvmWorks) {
  if (!probe_kvm()) GTEST_SKIP() << "no usable /dev/kvm here";
  FakeSysfsTree sysfs;
  sysfs.add("0000:3b:00.0", 7, "0x030200", "nvidia");
  sysfs.add("0000:3c:00.0", 7, "0x020000", "mlx5_core");
  const auto host =
      detect_vm_host(VmAcceleratorChoice::kKvm, one_gpu(), false, "/dev/kvm", sysfs.root());
  ASSERT_TRUE(host) << host.error().message;
  EXPECT_EQ(host->capability.accelerator, "kvm");
  EXPECT_FALSE(host->capability.gpu_passthrough);
  EXPECT_NE(host->capability.note.find("0000:3c:00.0"), std::string::npos) << host->capability.note;
}

}  // namespace
}  // namespace gpurent::agent
