// The node benchmark's figures (model/benchmark.h): per GPU, dense GEMM throughput by precision,
// device memory bandwidth and host<->device bandwidth; between GPUs that reach each other directly
// (NVLink, PCIe peer-to-peer), the copy bandwidth. Real GPUs are measured by gpurent-gpubench
// (gpubench.cu, built where nvcc is), whose JSON output parse_gpubench() reads; simulated GPUs
// report what a healthy GPU of their type measures, derived from its datasheet peaks
// (model::PeakPerf), marked simulated. to_json() writes the format parse_gpubench() reads.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "model/benchmark.h"
#include "model/node.h"

namespace gpurent::agent {

// Of a datasheet peak, what a healthy GPU measures (the simulated figures): cuBLAS reaches about
// 70 % of the dense tensor peak on large square GEMMs, a device copy about 90 % of the memory
// bandwidth, a pinned copy or a peer copy about 80 % of its link.
inline constexpr double kSimGemmEfficiency = 0.7;
inline constexpr double kSimMemoryEfficiency = 0.9;
inline constexpr double kSimLinkEfficiency = 0.8;

using model::GpuBenchmark;
using model::NodeBenchmark;
using model::PeerBandwidth;

// gpurent-gpubench's output (TFLOPS and GB/s, as people read them), in the model's integer units
// (GFLOPS, MB/s). Fails (invalid_benchmark) on malformed JSON, a missing or negative
// figure, an unknown precision, a peer naming a GPU not measured; and with the tool's own message
// (benchmark_failed) when it printed {"error": "..."}.
Result<NodeBenchmark> parse_gpubench(std::string_view output);
// The tool's format of `benchmark`.
nlohmann::json to_json(const NodeBenchmark& benchmark);

// The node's GPUs a request names, in its order; fails (unknown_gpu) on a UUID not the node's.
Result<std::vector<model::Gpu>> requested_gpus(const model::BenchmarkRequest& request,
                                               const std::vector<model::Gpu>& node_gpus);

// What healthy GPUs of these types measure, from the catalog's peaks; peers: each ordered pair in
// one NVLink domain. A GPU of a type the catalog lacks reports no figures.
NodeBenchmark simulated_benchmark(const std::vector<model::Gpu>& gpus);

}  // namespace gpurent::agent
