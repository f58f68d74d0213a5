// The node benchmark's figures (issue 30): per GPU, dense GEMM TFLOPS by precision, device memory
// bandwidth and host<->device bandwidth; between GPUs that reach each other directly (NVLink, PCIe
// peer-to-peer), the copy bandwidth. Real GPUs are measured by gpurent-gpubench (gpubench.cu,
// built where nvcc is), whose JSON output parse_gpubench() reads; simulated GPUs report what a
// healthy GPU of their type measures, derived from its datasheet peaks (model::PeakPerf), marked
// simulated. to_json() writes the format parse_gpubench() reads.
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "model/node.h"

namespace gpurent::agent {

// The GEMM precisions, in the order they are measured; a GPU without the unit has no figure.
inline constexpr std::array<std::string_view, 5> kGemmPrecisions = {"fp32", "tf32", "fp16", "bf16",
                                                                    "fp8"};

// Of a datasheet peak, what a healthy GPU measures (the simulated figures): cuBLAS reaches about
// 70 % of the dense tensor peak on large square GEMMs, a device copy about 90 % of the memory
// bandwidth, a pinned copy or a peer copy about 80 % of its link.
inline constexpr double kSimGemmEfficiency = 0.7;
inline constexpr double kSimMemoryEfficiency = 0.9;
inline constexpr double kSimLinkEfficiency = 0.8;

struct GpuBenchmark {
  int index = 0;     // the device index on its node
  std::string uuid;  // "GPU-..." as NVML gives it; "" where the tool could not say
  std::map<std::string, double, std::less<>> gemm_tflops;  // by precision (kGemmPrecisions)
  double memory_gbps = 0;
  double h2d_gbps = 0;
  double d2h_gbps = 0;
};

// A one-way copy from GPU `from` to GPU `to` (device indexes).
struct PeerBandwidth {
  int from = 0;
  int to = 0;
  double gbps = 0;
};

struct NodeBenchmark {
  bool simulated = false;
  std::vector<GpuBenchmark> gpus;  // by index
  std::vector<PeerBandwidth> peers;
};

// gpurent-gpubench's output. Fails (invalid_benchmark) on malformed JSON, a missing or negative
// figure, an unknown precision, a peer naming a GPU not measured; and with the tool's own message
// (benchmark_failed) when it printed {"error": "..."}.
Result<NodeBenchmark> parse_gpubench(std::string_view output);
nlohmann::json to_json(const NodeBenchmark& benchmark);

// What healthy GPUs of these types measure, from the catalog's peaks; peers: each ordered pair in
// one NVLink domain. A GPU of a type the catalog lacks reports no figures.
NodeBenchmark simulated_benchmark(const std::vector<model::Gpu>& gpus);

}  // namespace gpurent::agent
