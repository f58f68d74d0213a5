// The GPU types gpurent knows: a stable slug ("h100-80g"), the marketing name, memory, and the
// default on-demand price per GPU-hour. A discovered GPU is matched to a type by its NVML name and
// memory; an unknown model gets a slug derived from both and no price (it cannot be rented until
// an operator prices it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/money.h"

namespace gpurent::model {

// A GPU model's datasheet peaks (SXM/flagship board where there are several), dense (no
// structured sparsity): what a benchmark of a healthy GPU approaches. 0: the model has no such
// unit (no TF32 before Ampere, no FP8 before Ada/Hopper, no NVLink on PCIe-only boards).
struct PeakPerf {
  double fp32_tflops = 0;
  double tf32_tflops = 0;
  double fp16_tflops = 0;  // tensor cores, FP32 accumulate where the board allows it at full rate
  double bf16_tflops = 0;
  double fp8_tflops = 0;
  double memory_gbps = 0;  // device memory bandwidth, GB/s
  double pcie_gbps = 0;    // one direction of the host link, GB/s
  double nvlink_gbps = 0;  // NVLink bandwidth of one GPU, all links, one direction, GB/s
};

struct GpuType {
  std::string slug;          // "h100-80g"
  std::string display_name;  // "NVIDIA H100 80GB"
  int64_t memory_mb = 0;
  Micros default_price_per_hour = 0;  // per GPU, in micros of the platform currency; 0 = unpriced
  PeakPerf peak;
};

const std::vector<GpuType>& gpu_catalog();
const GpuType* find_gpu_type(std::string_view slug);
// What to tell someone who named a type the catalog lacks: the closest slugs ("did you mean
// h100-80g?": those the name begins, else those a few edits away) and where the list is.
std::string unknown_gpu_type_message(std::string_view type);

// Maps what NVML reports ("NVIDIA H100 80GB HBM3", 81559 MiB) to a slug.
std::string gpu_type_slug_for(std::string_view device_name, int64_t memory_mb);

// Parses "8xh100-80g" or "4xa100-80g,2xrtx4090-24g" (count defaults to 1). Every slug must be in
// the catalog.
struct SimGpuGroup {
  std::string slug;
  int count = 0;
};
std::optional<std::vector<SimGpuGroup>> parse_sim_gpu_spec(std::string_view spec,
                                                           std::string* error);

}  // namespace gpurent::model
