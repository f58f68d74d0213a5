#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>

#include "agent/gpu/discovery.h"
#include "agent/gpu/nvml.h"
#include "agent/gpu/sim_gpus.h"
#include "agent/test_util.h"
#include "agent/vm/fake_sysfs.h"
#include "common/json.h"
#include "model/agent_protocol.h"

namespace gpurent::agent {
namespace {

using testing::TempDir;

constexpr const char* kNoSuchLibrary = "libgpurent-test-no-such-nvml.so.1";

std::vector<std::string> uuids_of(const std::vector<model::Gpu>& gpus) {
  std::vector<std::string> out;
  for (const auto& gpu : gpus) out.push_back(gpu.uuid);
  return out;
}

TEST(SimGpusTest, ExpandsTheSpecIntoIndexedGpusWithNvmlShapedUuids) {
  TempDir dir;
  const auto gpus = simulated_gpus("4xa100-80g,2xrtx4090-24g", dir.path());
  ASSERT_TRUE(gpus) << gpus.error().message;
  ASSERT_EQ(gpus->size(), 6u);
  const std::regex uuid_shape("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  for (size_t i = 0; i < gpus->size(); ++i) {
    const auto& gpu = (*gpus)[i];
    EXPECT_EQ(gpu.index, static_cast<int>(i));
    EXPECT_TRUE(std::regex_match(gpu.uuid, uuid_shape)) << gpu.uuid;
    EXPECT_EQ(gpu.type, i < 4 ? "a100-80g" : "rtx4090-24g");
  }
  EXPECT_EQ((*gpus)[0].name, "NVIDIA A100 80GB");
  EXPECT_EQ((*gpus)[0].memory_mb, 81920);
  EXPECT_EQ((*gpus)[5].memory_mb, 24576);
  const auto uuids = uuids_of(*gpus);
  EXPECT_EQ(std::set<std::string>(uuids.begin(), uuids.end()).size(), uuids.size());
}

TEST(SimGpusTest, KeepsUuidsAcrossRestartsAndDrawsNewOnesForANewSpec) {
  TempDir dir;
  const auto first = simulated_gpus("2xh100-80g", dir.path());
  const auto again = simulated_gpus("2xh100-80g", dir.path());
  ASSERT_TRUE(first && again);
  EXPECT_EQ(uuids_of(*first), uuids_of(*again));

  const auto changed = simulated_gpus("3xh100-80g", dir.path());
  ASSERT_TRUE(changed);
  ASSERT_EQ(changed->size(), 3u);
  const auto new_uuids = uuids_of(*changed);
  for (const auto& uuid : uuids_of(*first)) {
    EXPECT_EQ(std::count(new_uuids.begin(), new_uuids.end(), uuid), 0);
  }
  const auto after_change = simulated_gpus("3xh100-80g", dir.path());
  ASSERT_TRUE(after_change);
  EXPECT_EQ(uuids_of(*changed), uuids_of(*after_change));
}

TEST(SimGpusTest, RejectsAnUnknownGpuType) {
  TempDir dir;
  const auto gpus = simulated_gpus("2xnot-a-gpu", dir.path());
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().code, "invalid_sim_gpus");
}

std::vector<int> domains_of(const std::vector<model::Gpu>& gpus) {
  std::vector<int> out;
  for (const auto& gpu : gpus) out.push_back(gpu.nvlink_domain);
  return out;
}

TEST(SimGpusTest, SxmTypesShareOneNvSwitchDomainPcieCardsHaveTheirOwn) {
  const auto sxm = sim_gpu_layout("8xh100-80g");
  ASSERT_TRUE(sxm) << sxm.error().message;
  EXPECT_EQ(domains_of(*sxm), (std::vector<int>(8, 0)));
  std::vector<int> switches, numa;
  for (const auto& gpu : *sxm) {
    switches.push_back(gpu.pcie_switch);
    numa.push_back(gpu.numa_node);
  }
  EXPECT_EQ(switches, (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(numa, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));

  const auto pcie = sim_gpu_layout("4xl40s-48g");
  ASSERT_TRUE(pcie);
  EXPECT_EQ(domains_of(*pcie), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ((*pcie)[3].pcie_switch, 1);
}

TEST(SimGpusTest, TheNvlinkOptionSplitsAGroupIntoEqualDomains) {
  const auto halves = sim_gpu_layout("8xh100-80g:nvlink=2");
  ASSERT_TRUE(halves) << halves.error().message;
  EXPECT_EQ(domains_of(*halves), (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));

  // Groups are numbered on across the node; NUMA halves span the whole node.
  const auto mixed = sim_gpu_layout("4xa100-80g,2xrtx3090-24g:nvlink=1");
  ASSERT_TRUE(mixed) << mixed.error().message;
  EXPECT_EQ(domains_of(*mixed), (std::vector<int>{0, 0, 0, 0, 1, 1}));
  EXPECT_EQ((*mixed)[4].pcie_switch, 2);
  EXPECT_EQ((*mixed)[2].numa_node, 0);
  EXPECT_EQ((*mixed)[3].numa_node, 1);
}

TEST(SimGpusTest, RejectsABadNvlinkOption) {
  for (const char* spec : {"8xh100-80g:nvlink=3", "8xh100-80g:nvlink=0", "8xh100-80g:nvlink=",
                           "8xh100-80g:nvlink=2x", "8xh100-80g:numa=2", "8xh100-80g:"}) {
    const auto gpus = sim_gpu_layout(spec);
    ASSERT_FALSE(gpus) << spec;
    EXPECT_EQ(gpus.error().code, "invalid_sim_gpus") << spec;
  }
}

TEST(SimGpusTest, KeepsTheTopologyWithTheUuids) {
  TempDir dir;
  const auto gpus = simulated_gpus("4xh100-80g:nvlink=2", dir.path());
  ASSERT_TRUE(gpus);
  EXPECT_EQ(domains_of(*gpus), (std::vector<int>{0, 0, 1, 1}));
}

TEST(NvmlGpuTest, MissingLibraryIsAnErrorValue) {
  const auto gpus = discover_nvml_gpus(kNoSuchLibrary);
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(gpus.error().code, "nvml_unavailable");
}

TEST(NvmlGpuTest, LibraryWithoutNvmlSymbolsIsAnErrorValue) {
  const auto gpus = discover_nvml_gpus("libm.so.6");  // loads, but is not NVML
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().code, "nvml_unavailable");
}

TEST(GpuDiscoveryTest, FallsBackToSimulatedH100sWithoutNvml) {
  TempDir dir;
  const auto inventory = discover_gpus("", dir.path(), kNoSuchLibrary);
  ASSERT_TRUE(inventory) << inventory.error().message;
  EXPECT_TRUE(inventory->simulated);
  ASSERT_EQ(inventory->gpus.size(), 8u);
  EXPECT_EQ(inventory->gpus[0].type, "h100-80g");
}

// An agent restarted while VMs hold GPUs: NVML sees none of them (they are bound to vfio-pci),
// the record of the last real inventory does. A recorded GPU that is not in a VM is not kept.
TEST(GpuDiscoveryTest, AGpuInAVmIsKeptFromTheRecordNotReplacedBySimulatedOnes) {
  TempDir dir;
  FakeSysfsTree sysfs;
  sysfs.add("0000:3b:00.0", 42, "0x030200", "vfio-pci");
  sysfs.add("0000:5e:00.0", 43, "0x030200", "nvidia");
  const model::Gpu in_vm{.uuid = "GPU-in-vm",
                         .index = 1,
                         .type = "h100-80g",
                         .name = "NVIDIA H100 80GB HBM3",
                         .memory_mb = 81559,
                         .pci_address = "0000:3b:00.0"};
  model::Gpu with_host = in_vm;
  with_host.uuid = "GPU-with-host";
  with_host.index = 0;
  with_host.pci_address = "0000:5e:00.0";
  model::Gpu bad_address = in_vm;
  bad_address.uuid = "GPU-bad-address";
  bad_address.pci_address = "../../../etc";
  std::ofstream(dir.path() / "gpus.json")
      << Json{{"gpus", std::vector<model::Gpu>{with_host, in_vm, bad_address}}}.dump();

  const auto inventory = discover_gpus("", dir.path(), kNoSuchLibrary, sysfs.root());
  ASSERT_TRUE(inventory) << inventory.error().message;
  EXPECT_FALSE(inventory->simulated);
  ASSERT_EQ(uuids_of(inventory->gpus), std::vector<std::string>{"GPU-in-vm"});
  EXPECT_EQ(inventory->gpus[0].memory_mb, 81559);
  EXPECT_EQ(inventory->gpus[0].pci_address, "0000:3b:00.0");

  // Given back to the host's driver, with NVML still unable to see it: the node has no real GPU.
  sysfs.bind("0000:3b:00.0", "nvidia");
  const auto after = discover_gpus("", dir.path(), kNoSuchLibrary, sysfs.root());
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->simulated);
}

TEST(GpuDiscoveryTest, ASimSpecForcesSimulation) {
  TempDir dir;
  const auto inventory = discover_gpus("2xl4-24g", dir.path());
  ASSERT_TRUE(inventory);
  EXPECT_TRUE(inventory->simulated);
  ASSERT_EQ(inventory->gpus.size(), 2u);
  EXPECT_EQ(inventory->gpus[1].type, "l4-24g");
}

}  // namespace
}  // namespace gpurent::agent
