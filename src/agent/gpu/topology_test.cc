#include "agent/gpu/topology.h"

#include <gtest/gtest.h>

#include <fstream>

#include "agent/test_util.h"

namespace gpurent::agent {
namespace {

using Levels = std::vector<std::vector<int>>;
using Links = std::vector<std::vector<bool>>;
using testing::TempDir;

constexpr int X = 0;  // the diagonal, which the rules ignore
constexpr int PIX = kTopologySingle;
constexpr int PXB = kTopologyMultiple;
constexpr int PHB = kTopologyHostBridge;
constexpr int NODE = kTopologyNode;
constexpr int SYS = kTopologySystem;
constexpr int UNK = kTopologyUnknown;

TEST(PcieSwitchGroupsTest, GroupsGpusWhoseCommonAncestorIsBelowTheHostBridge) {
  // A DGX A100-like box: pairs behind one switch (PIX), two pairs under one switch tree (PXB),
  // the two halves on different sockets (SYS).
  const Levels levels = {
      {X, PIX, PXB, PXB, SYS, SYS, SYS, SYS},    //
      {PIX, X, PXB, PXB, SYS, SYS, SYS, SYS},    //
      {PXB, PXB, X, PIX, SYS, SYS, SYS, SYS},    //
      {PXB, PXB, PIX, X, SYS, SYS, SYS, SYS},    //
      {SYS, SYS, SYS, SYS, X, PIX, NODE, NODE},  //
      {SYS, SYS, SYS, SYS, PIX, X, NODE, NODE},  //
      {SYS, SYS, SYS, SYS, NODE, NODE, X, PHB},  //
      {SYS, SYS, SYS, SYS, NODE, NODE, PHB, X},
  };
  EXPECT_EQ(pcie_switch_groups(8, levels), (std::vector<int>{0, 0, 0, 0, 1, 1, 2, 3}));
}

TEST(PcieSwitchGroupsTest, InternalBoardsShareAGroupAndALoneGpuIsItsOwn) {
  EXPECT_EQ(pcie_switch_groups(2, {{X, kTopologyInternal}, {kTopologyInternal, X}}),
            (std::vector<int>{0, 0}));
  EXPECT_EQ(pcie_switch_groups(1, {{X}}), (std::vector<int>{0}));
}

TEST(PcieSwitchGroupsTest, UnknownLevelsLeaveGpusUnknownOrSeparate) {
  // GPU 2 could not be placed against anyone; GPUs 0 and 1 only from one side of the matrix.
  const Levels levels = {{X, UNK, UNK}, {PIX, X, UNK}, {UNK, UNK, X}};
  EXPECT_EQ(pcie_switch_groups(3, levels), (std::vector<int>{0, 0, -1}));
  EXPECT_EQ(pcie_switch_groups(3, {}), (std::vector<int>{-1, -1, -1}));
  EXPECT_EQ(pcie_switch_groups(3, {{X}}), (std::vector<int>{-1, -1, -1}));  // not 3 x 3
}

TEST(NvlinkDomainsTest, ConnectedComponentsNumberedByTheirLowestGpu) {
  // 0-3 and 1-2 are linked pairs, 4 has no link.
  Links links(5, std::vector<bool>(5, false));
  links[0][3] = links[3][0] = true;
  links[1][2] = true;  // one side is enough
  EXPECT_EQ(nvlink_domains(5, links), (std::vector<int>{0, 1, 1, 0, 2}));
  EXPECT_EQ(nvlink_domains(2, {}), (std::vector<int>{-1, -1}));
}

TEST(NvlinkMatrixTest, GpusOnOneNvSwitchAreOneDomain) {
  // HGX: every GPU has links to the same switches (and NVML spells bus ids in either case).
  const std::vector<std::string> bus_ids = {"00000000:18:00.0", "00000000:2A:00.0",
                                            "00000000:3A:00.0", "00000000:5D:00.0"};
  const std::vector<std::vector<std::string>> far_ends = {
      {"00000000:C5:00.0", "00000000:C6:00.0"},
      {"00000000:c5:00.0", "00000000:C6:00.0"},
      {"00000000:C6:00.0"},
      {},  // its links are down
  };
  const auto links = nvlink_matrix(bus_ids, far_ends);
  EXPECT_EQ(nvlink_domains(4, links), (std::vector<int>{0, 0, 0, 1}));
}

TEST(NvlinkMatrixTest, DirectLinksJoinPairsAndSelfLinksAreIgnored) {
  // Two bridged pairs of PCIe cards: 0-1 and 2-3; GPU 3 also reports a link to itself.
  const std::vector<std::string> bus_ids = {"0000:01:00.0", "0000:02:00.0", "0000:03:00.0",
                                            "0000:04:00.0"};
  const std::vector<std::vector<std::string>> far_ends = {
      {"0000:02:00.0", "0000:02:00.0"}, {"0000:01:00.0"}, {"0000:04:00.0"}, {"0000:04:00.0"}};
  const auto links = nvlink_matrix(bus_ids, far_ends);
  EXPECT_FALSE(links[3][3]);
  EXPECT_EQ(nvlink_domains(4, links), (std::vector<int>{0, 0, 1, 1}));
}

TEST(SysfsPciAddressTest, ShortensNvmlsDomainAndLowercases) {
  EXPECT_EQ(sysfs_pci_address("00000000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(sysfs_pci_address("0000:65:00.1"), "0000:65:00.1");
  EXPECT_EQ(sysfs_pci_address("00010000:01:00.0"), "10000:01:00.0");  // a VMD domain
  EXPECT_EQ(sysfs_pci_address(""), "");
  EXPECT_EQ(sysfs_pci_address("00000000:1B:00"), "");
  EXPECT_EQ(sysfs_pci_address("../../etc:00:00.0"), "");
  EXPECT_EQ(sysfs_pci_address("0000:1g:00.0"), "");
}

TEST(PciNumaNodeTest, ReadsTheKernelsNumaNode) {
  TempDir sys;
  const auto write = [&](std::string_view address, std::string_view text) {
    const auto dir = sys.path() / "bus" / "pci" / "devices" / address;
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "numa_node") << text;
  };
  write("0000:1b:00.0", "1\n");
  write("0000:1c:00.0", "-1\n");  // what a single-node machine says
  EXPECT_EQ(pci_numa_node("00000000:1B:00.0", sys.path()), 1);
  EXPECT_EQ(pci_numa_node("00000000:1C:00.0", sys.path()), -1);
  EXPECT_EQ(pci_numa_node("00000000:1D:00.0", sys.path()), -1);  // no such device
  EXPECT_EQ(pci_numa_node("", sys.path()), -1);
}

}  // namespace
}  // namespace gpurent::agent
