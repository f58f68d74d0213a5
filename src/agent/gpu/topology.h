// How a host's GPUs are wired to each other, reduced to the three numbers model::Gpu carries for
// placement (nvlink_domain, pcie_switch, numa_node). Pure functions over plain data, so that the
// rules are tested without a GPU; nvml.cc gathers the data from the driver.
//
// NVLink domains. Two GPUs share a domain when an active NVLink joins them, directly (GPU to GPU)
// or through an NVSwitch (both have a link whose far end is the same switch), and domains are the
// connected components of that relation. A GPU without an active link is a domain of its own. When
// NVLink cannot be queried at all (an old driver without the calls), every domain is -1 (unknown).
//
// PCIe switches. Two GPUs share a pcie_switch group when their closest common PCIe ancestor is
// below the host bridge: NVML level INTERNAL (one board), SINGLE (one switch) or MULTIPLE (a tree
// of switches). Traffic between them then stays inside the switch fabric, never crossing the CPU's
// root complex, which is what matters for peer-to-peer bandwidth (nvidia-smi topo's PIX and PXB).
// Groups are connected components, so an inconsistent matrix still yields a partition. A GPU whose
// levels to every other GPU are unknown gets -1.
//
// Numbering: groups are numbered 0, 1, ... in the order of their lowest GPU index, so the same
// wiring always yields the same numbers.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::agent {

// NVML's nvmlGpuTopologyLevel_t values, and kTopologyUnknown for a pair NVML could not place.
inline constexpr int kTopologyUnknown = -1;
inline constexpr int kTopologyInternal = 0;
inline constexpr int kTopologySingle = 10;
inline constexpr int kTopologyMultiple = 20;
inline constexpr int kTopologyHostBridge = 30;
inline constexpr int kTopologyNode = 40;
inline constexpr int kTopologySystem = 50;

// Groups `count` GPUs from a symmetric count x count matrix (the diagonal is ignored). An empty
// matrix means the relation is unknown: every GPU gets -1.
std::vector<int> nvlink_domains(size_t count, const std::vector<std::vector<bool>>& nvlinked);
std::vector<int> pcie_switch_groups(size_t count, const std::vector<std::vector<int>>& levels);

// The NVLink relation from what each GPU's active links lead to: far_ends[i] holds the PCI bus id
// at the far end of each active link of GPU i (a GPU's bus id from bus_ids, or a switch's).
// Bus ids are compared as NVML formats them, case-insensitively.
std::vector<std::vector<bool>> nvlink_matrix(const std::vector<std::string>& bus_ids,
                                             const std::vector<std::vector<std::string>>& far_ends);

// "00000000:65:00.0" (NVML, 32-bit domain) -> "0000:65:00.0" (the kernel's sysfs name), or "" when
// the text is not a PCI address.
std::string sysfs_pci_address(std::string_view nvml_bus_id);

// The NUMA node the kernel reports for a PCI device
// (<sysfs_root>/bus/pci/devices/<addr>/numa_node), or -1 when it is unknown (no such file, or the
// kernel's own -1 on single-node machines).
int pci_numa_node(std::string_view nvml_bus_id, const std::filesystem::path& sysfs_root = "/sys");

}  // namespace gpurent::agent
