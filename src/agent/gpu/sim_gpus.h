// Simulated GPUs, for hosts without NVIDIA hardware (development, demos, tests, large simulated
// fleets on one machine).
//
// The spec is parsed by model::parse_sim_gpu_spec ("8xh100-80g", "4xa100-80g,2xrtx4090-24g"). Each
// simulated GPU gets a UUID shaped like NVML's ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"), drawn
// at random on the first start and kept in <data_dir>/sim_gpus.json: the server identifies GPUs by
// UUID, so a restarted agent must present the same ones. A changed spec draws new UUIDs.
// Thread-safety: none needed beyond the file system's (one agent owns one data directory).
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/node.h"

namespace gpurent::agent {

// Errors: code "invalid_sim_gpus" for a bad spec; "internal" when the UUID file cannot be written.
Result<std::vector<model::Gpu>> simulated_gpus(std::string_view spec,
                                               const std::filesystem::path& data_dir);

}  // namespace gpurent::agent
