// Which GPUs this node offers: the one place that chooses between simulated and real GPUs.
//
// Order: a non-empty sim_spec forces simulation; otherwise the real GPUs, when there is at least
// one; otherwise a simulated 8xh100-80g node (so `gpurent dev` works on any laptop). The choice
// is logged. Errors only for a bad sim_spec or an unwritable data directory.
//
// The real GPUs are NVML's, and those of the last real inventory (kept in <data_dir>/gpus.json)
// that are bound to vfio-pci now (sysfs): a GPU passed through to a VM has left the host's driver,
// so NVML does not list it, yet it is the node's, and the VM gives it back when it ends. An agent
// restarted while a VM holds GPUs thus registers the node as it was (not with fewer GPUs, nor, when
// every GPU is in a VM, as a simulated node).
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "agent/gpu/nvml.h"
#include "common/result.h"
#include "model/node.h"

namespace gpurent::agent {

inline constexpr std::string_view kDefaultSimGpus = "8xh100-80g";

struct GpuInventory {
  std::vector<model::Gpu> gpus;
  bool simulated = false;
};

// nvml_library: see discover_nvml_gpus (tests pass a library that is not there); sysfs: where the
// host's sysfs is (tests pass a fake tree).
Result<GpuInventory> discover_gpus(std::string_view sim_spec, const std::filesystem::path& data_dir,
                                   const char* nvml_library = kNvmlLibrary,
                                   const std::filesystem::path& sysfs = "/sys");

}  // namespace gpurent::agent
