#include "billing/work_estimate.h"

#include <algorithm>

namespace gpurent::billing {

Result<WorkEstimate> estimate_work(int64_t images, int64_t images_per_hour_per_gpu, int gpu_count,
                                   int gpu_milli, const Estimate& hourly) {
  if (images <= 0 || images_per_hour_per_gpu <= 0 || gpu_count <= 0 || gpu_milli <= 0) {
    return fail(Error::invalid("invalid_work", "the work and its throughput must be positive"));
  }
  WorkEstimate e;
  // A product of counts the API bounds (GPUs, thousandths) and a measured figure: 128 bits.
  e.images_per_hour = static_cast<int64_t>(static_cast<__int128>(images_per_hour_per_gpu) *
                                           gpu_count * gpu_milli / 1000);
  if (e.images_per_hour <= 0) {
    return fail(Error::invalid("invalid_work", "the launch's share of a GPU processes no images"));
  }
  const __int128 image_seconds = static_cast<__int128>(images) * 3600;
  e.seconds = static_cast<int64_t>((image_seconds + e.images_per_hour - 1) / e.images_per_hour);
  e.cost = charge_for_seconds(hourly.total_per_hour, 1000,
                              std::max(e.seconds, hourly.minimum_billed_seconds));
  return e;
}

}  // namespace gpurent::billing
