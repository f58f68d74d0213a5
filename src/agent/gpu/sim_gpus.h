// Simulated GPUs, for hosts without NVIDIA hardware (development, demos, tests, large simulated
// fleets on one machine).
//
// The spec is a comma-separated list of groups, COUNTxTYPE[:nvlink=DOMAINS], each COUNTxTYPE as
// model::parse_sim_gpu_spec reads it ("8xh100-80g", "4xa100-80g,2xrtx3090-24g:nvlink=1").
//
// Topology, as real hosts of that kind are wired: a group of an SXM type (H100, H200, H800, A100,
// A800, V100: the NVSwitch baseboards) is one NVLink domain; every GPU of a PCIe type (L40S, L4,
// A10, RTX ...) is a domain of its own. `:nvlink=D` overrides that with D equal domains (D must
// divide COUNT: "8xh100-80g:nvlink=2" is two domains of four, "4xrtx3090-24g:nvlink=2" two bridged
// pairs). Within a group, GPUs sit two to a PCIe switch; over the whole node, the first half of the
// GPUs is on NUMA node 0 and the rest on node 1.
//
// Each simulated GPU gets a UUID shaped like NVML's ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"),
// drawn at random on the first start and kept in <data_dir>/sim_gpus.json: the server identifies
// GPUs by UUID, so a restarted agent must present the same ones. A changed spec draws new UUIDs.
// Thread-safety: calls on different data directories may run at once (a simulated fleet does).
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/node.h"

namespace gpurent::agent {

// The GPUs of the spec without their UUIDs (no file is touched). Errors: code "invalid_sim_gpus"
// for a bad spec (or a D that does not divide its COUNT).
Result<std::vector<model::Gpu>> sim_gpu_layout(std::string_view spec);

// The layout with the node's UUIDs. Errors: those of sim_gpu_layout; "internal" when the UUID file
// cannot be written.
Result<std::vector<model::Gpu>> simulated_gpus(std::string_view spec,
                                               const std::filesystem::path& data_dir);

}  // namespace gpurent::agent
