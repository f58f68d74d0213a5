// GPU passthrough's sysfs logic on a fake tree: the GPU's IOMMU group planned (its own functions
// and bridges go with it, anything else refuses), no IOMMU refused, and the writes that hand the
// group to vfio-pci and back, in the kernel's order.
#include "agent/vm/vfio.h"

#include <gtest/gtest.h>

#include "agent/vm/fake_sysfs.h"

namespace gpurent::agent {
namespace {

namespace fs = std::filesystem;

class FakeSysfs : public testing::Test, protected FakeSysfsTree {};

constexpr const char* kGpu = "0000:3b:00.0";

TEST_F(FakeSysfs, AGpuGoesWithItsOwnFunctionsAndBridges) {
  add(kGpu, 42, "0x030200", "nvidia");
  add("0000:3b:00.1", 42, "0x040300", "snd_hda_intel");  // its HDMI audio
  add("0000:3a:00.0", 42, "0x060400", "pcieport");       // the bridge above it
  add("0000:5e:00.0", 43, "0x030200", "nvidia");         // another GPU, another group
  const auto plan = plan_passthrough(root_, kGpu);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->iommu_group, 42);
  ASSERT_EQ(plan->functions.size(), 3u);
  EXPECT_EQ(plan->functions[0].address, kGpu);
  EXPECT_EQ(plan->functions[0].driver, "nvidia");
  EXPECT_EQ(plan->functions[0].vendor, "0x10de");
  EXPECT_TRUE(plan->functions[1].bridge);
  EXPECT_EQ(plan->to_bind(), (std::vector<std::string>{kGpu, "0000:3b:00.1"}));
}

TEST_F(FakeSysfs, AGroupSharedWithAnotherDeviceOrNoIommuIsRefused) {
  EXPECT_EQ(plan_passthrough(root_, kGpu).error().code, "iommu_disabled");
  add(kGpu, 7, "0x030200", "nvidia");
  add("0000:3c:00.0", 7, "0x020000", "mlx5_core");  // a NIC behind the same switch, no ACS
  const auto shared = plan_passthrough(root_, kGpu);
  ASSERT_FALSE(shared);
  EXPECT_EQ(shared.error().code, "iommu_group_shared");
  EXPECT_NE(shared.error().message.find("0000:3c:00.0"), std::string::npos);
  EXPECT_NE(shared.error().message.find("mlx5_core"), std::string::npos);
  EXPECT_EQ(plan_passthrough(root_, "0000:99:00.0").error().code, "pci_device_not_found");
  for (const char* bad : {"", "00000000:3B:00.0", "0000:3b:00.0/../../x", "../../etc"}) {
    EXPECT_EQ(plan_passthrough(root_, bad).error().code, "invalid_pci_address") << bad;
  }
}

TEST_F(FakeSysfs, BindingOverridesUnbindsAndProbesAndGivingBackUndoesIt) {
  add(kGpu, 42, "0x030200", "nvidia");
  add("0000:3b:00.1", 42, "0x040300", "");  // no driver: nothing to unbind
  add("0000:3a:00.0", 42, "0x060400", "pcieport");
  const auto plan = plan_passthrough(root_, kGpu);
  ASSERT_TRUE(plan);
  ASSERT_TRUE(bind_to_vfio(root_, *plan));
  const fs::path gpu = root_ / "bus" / "pci" / "devices" / kGpu;
  EXPECT_EQ(read(gpu / "driver_override"), "vfio-pci");
  EXPECT_EQ(read(root_ / "bus" / "pci" / "drivers" / "nvidia" / "unbind"), kGpu);
  EXPECT_EQ(read(root_ / "bus" / "pci" / "devices" / "0000:3b:00.1" / "driver_override"),
            "vfio-pci");
  EXPECT_EQ(read(root_ / "bus" / "pci" / "drivers_probe"), "0000:3b:00.1") << "the last probed";
  EXPECT_EQ(read(root_ / "bus" / "pci" / "devices" / "0000:3a:00.0" / "driver_override"),
            "(null)\n")
      << "the bridge stays with the host";

  // The kernel bound them to vfio-pci; a second bind writes nothing.
  bind(kGpu, "vfio-pci");
  bind("0000:3b:00.1", "vfio-pci");
  write(root_ / "bus" / "pci" / "drivers_probe", "");
  ASSERT_TRUE(bind_to_vfio(root_, *plan));
  EXPECT_EQ(read(root_ / "bus" / "pci" / "drivers_probe"), "");

  ASSERT_TRUE(give_back_to_host(root_, *plan));
  EXPECT_EQ(read(gpu / "driver_override"), "\n");
  EXPECT_EQ(read(root_ / "bus" / "pci" / "drivers" / "vfio-pci" / "unbind"), "0000:3b:00.1");
  EXPECT_EQ(read(root_ / "bus" / "pci" / "drivers_probe"), "0000:3b:00.1");
}

}  // namespace
}  // namespace gpurent::agent
