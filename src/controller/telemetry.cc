// Controller members for the GPU telemetry of node reports (gpu_telemetry.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "controller/controller.h"

namespace gpurent::controller {

model::TelemetryBatch digest_for_apply_report(model::TelemetryBatch batch) {
  std::vector<model::GpuSample>& samples = batch.samples;
  size_t kept = 0;
  for_each_gpu_run(samples, [&](size_t begin, size_t end) {
    size_t newest = begin;  // as record_telemetry picks it: the last of the latest time
    for (size_t i = begin + 1; i < end; ++i) {
      if (samples[i].time_ms >= samples[newest].time_ms) newest = i;
    }
    for (size_t i = begin; i < end; ++i) {
      if (i == begin || i == newest || samples[i].ecc_dbe_total != samples[i - 1].ecc_dbe_total) {
        if (kept != i) samples[kept] = std::move(samples[i]);
        ++kept;
      }
    }
  });
  samples.resize(kept);
  return batch;
}

void Controller::record_telemetry(const model::Node& node, const model::TelemetryBatch& batch) {
  nodes_.record_telemetry(node, batch);
  feed_series(node, batch);
}

void Controller::feed_series(const model::Node& node, const model::TelemetryBatch& batch) {
  if (options_.series_fed_by_host) return;  // the host's telemetry thread did (series_feed.h)
  monitor_.series().ingest(node.id, batch);
  monitor_.collect_rollups();
}

}  // namespace gpurent::controller
