// GPU benchmarks (model/benchmark.h): each GPU's measured figures and training runs and their
// history, what each GPU type measures (the median over its GPUs, and the spread), and how far a
// GPU falls below its type.
//
// A type's figures are those of the newest run of each of its GPUs: the median of each figure, and
// the spread of the training figure (model::training_gflops) as (max - min) / median. A GPU is
// judged against its type only where at least kMinGpusToJudge GPUs of the type have been measured
// (with fewer, the median is too much the GPU's own figure): its shortfall is how far its newest
// run falls below the median, in percent, on the figure where it falls furthest. The figures
// judged are the GPU's own: GEMM in each precision and device memory bandwidth. Host-to-device
// copies are shown but not judged: they measure the host's PCIe path as much as the card.
//
// Invariants: a GPU has at most one history, keyed by its UUID, with at most
// model::kBenchmarkHistory runs of each kind, oldest first; every history changed is in the pending
// ChangeSet, durable with the report that carried the runs.
//
// Part of the Controller (controller.h), which asks nodes for benchmarks, keeps the GPUs being
// measured out of the scheduler's mask, and flags (and by policy quarantines) a slow GPU
// (benchmarks.cc).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "controller/change_set.h"
#include "model/benchmark.h"
#include "model/node.h"

namespace gpurent::controller {

// The fewest GPUs of a type measured before any of them is judged against the type's median.
inline constexpr int kMinGpusToJudge = 3;
// A GPU this far below its type's median (percent) is slow.
inline constexpr double kSlowShortfallPercent = 10;

class GpuBenchmarks {
 public:
  struct Context {
    const Clock& clock;
    ChangeSet& changes;
  };
  explicit GpuBenchmarks(Context context) : c_(context) {}
  GpuBenchmarks(const GpuBenchmarks&) = delete;
  GpuBenchmarks& operator=(const GpuBenchmarks&) = delete;

  // The histories from the store's snapshot.
  void restore(Snapshot& snapshot);

  // Records the node's answer to `request`: a run for each GPU the request named and the result
  // measured (others in the result are ignored). Returns the UUIDs recorded, in the result's
  // order.
  std::vector<std::string> record(const model::Node& node, const model::BenchmarkRequest& request,
                                  const model::NodeBenchmark& result);

  // Records a training benchmark run (model::TrainingRun, its time set here) on the node's GPU
  // `uuid`, which the caller checked is on the node. A run of an instance already recorded on the
  // GPU is not recorded twice: returns the one kept.
  const model::TrainingRun& record_training(const model::Node& node, const model::Gpu& gpu,
                                            model::TrainingRun run);

  // The GPU's history; nullptr when it was never measured.
  const model::GpuBenchmarkHistory* of_gpu(std::string_view uuid) const;

  // What a type trains at: the median images an hour of each precision over the GPUs whose
  // newest training run has the shape (model, batch, image size) of the type's newest. Runs of
  // other shapes are not comparable and are left out.
  struct TrainingFigures {
    int gpus = 0;  // GPUs whose newest run has the shape
    std::string model;
    int batch = 0;
    int image_size = 0;
    std::map<std::string, int64_t> images_per_hour;
  };
  // What a type measures: the median of each figure over the newest run of each of its GPUs.
  struct TypeFigures {
    int gpus = 0;            // GPUs measured by the node benchmark
    bool simulated = false;  // every one of them simulated
    std::map<std::string, int64_t> gemm_gflops;
    int64_t memory_mbps = 0;
    int64_t h2d_mbps = 0;
    int64_t d2h_mbps = 0;
    // (max - min) / median of the training figure, in percent; 0 with one GPU.
    double training_spread_percent = 0;
    std::optional<TrainingFigures> resnet50;  // none before a training run is recorded
  };
  // None when no GPU of the type was measured (by either benchmark).
  const TypeFigures* of_type(std::string_view gpu_type) const;

  // How far the GPU's newest run falls below its type's median, on its worst judged figure.
  struct Shortfall {
    double percent = 0;  // 0 when it falls below on no figure
    std::string figure;  // "gemm_fp16", "memory", ...; "" when percent is 0
    int64_t measured = 0;
    int64_t median = 0;
  };
  // None when the GPU was never measured or fewer than kMinGpusToJudge of its type were.
  std::optional<Shortfall> shortfall(std::string_view uuid) const;

  // The histories of the node's GPUs that were measured, by GPU index.
  std::vector<const model::GpuBenchmarkHistory*> on_node(const model::Node& node) const;

 private:
  Context c_;
  std::map<std::string, model::GpuBenchmarkHistory, std::less<>> by_gpu_;
  // Worked out on first use after a GPU was recorded (the alert rules ask for every GPU's
  // shortfall every evaluation; records are rare).
  mutable std::map<std::string, TypeFigures, std::less<>> types_;
  mutable std::map<std::string, std::optional<Shortfall>, std::less<>> shortfalls_;
};

}  // namespace gpurent::controller
