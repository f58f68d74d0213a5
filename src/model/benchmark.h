// The node benchmark (docs/node-benchmark.md): what is measured of each GPU, how the server asks a
// node to measure and how the agent answers, and each GPU's history as the store keeps it.
//
// Figures are integers: GEMM throughput in GFLOPS, bandwidths in MB/s (10^6 bytes a second). A
// GPU's figures then compare exactly between the agent, the store and the server (a type's median
// is one GPU's figure, or the mean of two rounded down), and every encoding of a message agrees
// byte for byte without a floating-point format in the agent protocol.
//
// The exchange is level-triggered like the rest of the protocol (agent_protocol.h): the node's
// row holds the pending BenchmarkRequest, its desired state carries it, and every report of the
// agent carries the BenchmarkOutcome of the request it last finished. The server takes an outcome
// whose request is the pending one and drops the request, so a lost message costs a repeat, never
// a result.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/field_table.h"
#include "common/result.h"
#include "model/json_form.h"

namespace gpurent::model {

// The GEMM precisions, in the order they are measured; a GPU without the unit has no figure.
inline constexpr std::array<std::string_view, 5> kGemmPrecisions = {"fp32", "tf32", "fp16", "bf16",
                                                                    "fp8"};

struct GpuBenchmark {
  int index = 0;                               // the device index on its node
  std::string uuid;                            // "GPU-..." as NVML gives it
  std::map<std::string, int64_t> gemm_gflops;  // dense GEMM, by precision (kGemmPrecisions)
  int64_t memory_mbps = 0;                     // a device-to-device copy, read plus write
  int64_t h2d_mbps = 0;                        // pinned host memory to the GPU
  int64_t d2h_mbps = 0;
};

template <class V, schema::Of<GpuBenchmark> S>
void fields(V& visit, S& x) {
  visit("d2h_mbps", x.d2h_mbps);
  visit("gemm_gflops", x.gemm_gflops);
  visit("h2d_mbps", x.h2d_mbps);
  visit("index", x.index);
  visit("memory_mbps", x.memory_mbps);
  visit("uuid", x.uuid);
}

// What the GPU is sold on: its dense GEMM throughput in the precision training uses, BF16 where
// the GPU has it, else FP16, else FP32. None for a GPU with none of them measured.
std::optional<int64_t> training_gflops(const std::map<std::string, int64_t>& gemm_gflops);

// A one-way copy from GPU `from` to GPU `to` (device indexes on the node).
struct PeerBandwidth {
  int from = 0;
  int to = 0;
  int64_t mbps = 0;
};

template <class V, schema::Of<PeerBandwidth> S>
void fields(V& visit, S& x) {
  visit("from", x.from);
  visit("mbps", x.mbps);
  visit("to", x.to);
}

struct NodeBenchmark {
  bool simulated = false;  // the figures are the catalog's (simulated GPUs), not measured
  std::vector<GpuBenchmark> gpus;
  std::vector<PeerBandwidth> peers;
};

template <class V, schema::Of<NodeBenchmark> S>
void fields(V& visit, S& x) {
  visit("gpus", x.gpus);
  visit("peers", x.peers);
  visit("simulated", x.simulated);
}

// Why a node was asked to measure its GPUs.
enum class BenchmarkReason {
  kJoin,      // its GPUs had never been measured
  kReleased,  // an operator put a quarantined GPU back in service
  kOperator,  // an operator asked (gpurent nodes bench)
  kIdle,      // the node was idle and its figures older than the interval
};
std::string_view to_string(BenchmarkReason reason);  // "join", "released", "operator", "idle"
bool from_string(std::string_view text, BenchmarkReason* out);

// The server's ask: measure these GPUs (UUIDs) and nothing else. No work is placed on them until
// the answer comes or the ask times out.
struct BenchmarkRequest {
  int64_t id = 0;  // unique per node: the node's generation when it was asked
  std::vector<std::string> gpus;
  BenchmarkReason reason = BenchmarkReason::kOperator;
  Timestamp asked_at{};
};

template <class V, schema::Of<BenchmarkRequest> S>
void fields(V& visit, S& x) {
  visit("asked_at", x.asked_at);
  visit("gpus", x.gpus);
  visit("id", x.id);
  visit("reason", x.reason);
}

// The agent's answer to request `request`: the figures, or why there are none.
struct BenchmarkOutcome {
  int64_t request = 0;
  std::optional<NodeBenchmark> result;
  std::string error;  // set when result is absent
};

template <class V, schema::Of<BenchmarkOutcome> S>
void fields(V& visit, S& x) {
  visit("error", x.error, schema::kOmitEmpty);
  visit("request", x.request);
  visit("result", x.result, schema::kOmitEmpty);
}

// One measurement of one GPU, with its copies to the node's other GPUs.
struct BenchmarkRun {
  Timestamp at{};  // when the server took the result
  BenchmarkReason reason = BenchmarkReason::kOperator;
  bool simulated = false;
  GpuBenchmark figures;
  std::vector<PeerBandwidth> peers;  // from this GPU
};

template <class V, schema::Of<BenchmarkRun> S>
void fields(V& visit, S& x) {
  visit("at", x.at);
  visit("figures", x.figures);
  visit("peers", x.peers, schema::kOptional);
  visit("reason", x.reason);
  visit("simulated", x.simulated);
}

// The runs of one GPU kept (of each kind): the newest kBenchmarkHistory, oldest first.
inline constexpr size_t kBenchmarkHistory = 20;

// The training benchmark: the built-in template kResnet50Template (model/template.cc) trains
// ResNet-50 on synthetic data and prints one line per precision, kResnet50ResultPrefix followed by
// a JSON object; an operator records a finished run's figures against the GPU it ran on.
inline constexpr std::string_view kResnet50Template = "resnet50-bench";
inline constexpr std::string_view kResnet50ResultPrefix = "GPURENT_RESNET50 ";
// The precisions the template measures, in the order it prints them: FP32, and mixed precision
// (FP16 with loss scaling on a GPU, BF16 on a CPU).
inline constexpr std::array<std::string_view, 2> kTrainingPrecisions = {"fp32", "amp"};

// One training benchmark run on one GPU. Throughput is in images an hour, an integer like the
// node benchmark's figures (images a second to three decimals: a CPU's few a second stay exact
// enough), and what an estimate divides a number of images by.
struct TrainingRun {
  Timestamp at{};           // when it was recorded
  std::string instance_id;  // the instance that ran it (its log and events)
  std::string model;        // "resnet50"
  int batch = 0;            // images a step
  int image_size = 0;       // pixels a side
  std::string device;       // as the framework names it: "NVIDIA H100 80GB HBM3", "cpu"
  std::map<std::string, int64_t> images_per_hour;  // by precision (kTrainingPrecisions)
};

template <class V, schema::Of<TrainingRun> S>
void fields(V& visit, S& x) {
  visit("at", x.at);
  visit("batch", x.batch);
  visit("device", x.device);
  visit("image_size", x.image_size);
  visit("images_per_hour", x.images_per_hour);
  visit("instance_id", x.instance_id);
  visit("model", x.model);
}

// What a resnet50-bench run's log says: the run (without its time and instance) and the GPU it
// names (its CUDA_VISIBLE_DEVICES: one UUID, "" when it saw none). 422 invalid_benchmark_log when
// the log lacks a precision's line, or its lines disagree on the shape or the GPU, or a figure is
// out of range.
struct TrainingReport {
  std::string gpu;
  TrainingRun run;
};
Result<TrainingReport> resnet50_report(std::string_view log);

// The store's gpu_benchmarks row, keyed by the GPU's UUID so that it follows the card.
struct GpuBenchmarkHistory {
  std::string id;  // the GPU's UUID
  std::string node_id;
  std::string gpu_type;
  int gpu_index = 0;
  std::vector<BenchmarkRun> runs;
  std::vector<TrainingRun> trainings;  // the newest kBenchmarkHistory, oldest first
};

template <class V, schema::Of<GpuBenchmarkHistory> S>
void fields(V& visit, S& x) {
  visit("gpu_index", x.gpu_index);
  visit("gpu_type", x.gpu_type);
  visit("id", x.id);
  visit("node_id", x.node_id);
  visit("runs", x.runs);
  visit("trainings", x.trainings, schema::kOmitEmpty);
}

}  // namespace gpurent::model
