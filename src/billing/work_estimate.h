// How long a described piece of training takes on a launch, and what it costs: the images it
// must process over the launch's measured throughput (a GPU type's median ResNet-50 images an hour,
// controller/gpu_benchmarks.h), priced at an estimate's hourly charge.
//
// The throughput of several GPUs (or a share of one) is taken as the one GPU's in proportion: data
// parallel training at linear scaling, which real runs approach within a few percent on one node
// and fall short of across nodes. The answer says so (docs/node-benchmark.md); it is an estimate
// to compare offers by, not a promise.
#pragma once

#include <cstdint>
#include <string>

#include "billing/billing.h"
#include "common/money.h"
#include "common/result.h"

namespace gpurent::billing {

// Training described by its data: `epochs` passes over `images_per_epoch` images of `model`, in
// `precision` (model::kTrainingPrecisions).
inline constexpr int64_t kImageNetTrainingImages = 1'281'167;  // ImageNet-1k's training set
struct TrainingWork {
  std::string model = "resnet50";
  int64_t epochs = 1;
  int64_t images_per_epoch = kImageNetTrainingImages;
  std::string precision = "amp";
};

struct WorkEstimate {
  int64_t images_per_hour = 0;  // the launch's: per GPU x GPUs x share
  int64_t seconds = 0;          // to process the images, rounded up
  Micros cost = 0;              // those seconds (at least the minimum billed) at the hourly charge
};

// `images` to process at `images_per_hour_per_gpu` (> 0) on `gpu_count` GPUs of `gpu_milli`
// thousandths each, charged `hourly`. kInvalid "invalid_work" for a count out of range.
Result<WorkEstimate> estimate_work(int64_t images, int64_t images_per_hour_per_gpu, int gpu_count,
                                   int gpu_milli, const Estimate& hourly);

}  // namespace gpurent::billing
