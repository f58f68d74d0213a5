// Which GPUs this node offers: the one place that chooses between simulated and real GPUs.
//
// Order: a non-empty sim_spec forces simulation; otherwise NVML, when it loads and reports at least
// one GPU; otherwise a simulated 8xh100-80g node (so `gpurent dev` works on any laptop). The choice
// is logged. Errors only for a bad sim_spec or an unwritable data directory.
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

// nvml_library: see discover_nvml_gpus (tests pass a library that is not there).
Result<GpuInventory> discover_gpus(std::string_view sim_spec, const std::filesystem::path& data_dir,
                                   const char* nvml_library = kNvmlLibrary);

}  // namespace gpurent::agent
