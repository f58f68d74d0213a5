// Controller members for the GPU telemetry of node reports (gpu_telemetry.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "controller/controller.h"

namespace gpurent::controller {

namespace {

// Calls f(begin, end) for each run of consecutive samples of one GPU. A decoded batch holds each
// GPU's samples together (model/telemetry.h), so a GPU is looked up once per report, not once per
// sample; a batch in another order is still handled right, in more runs.
template <class F>
void for_each_gpu_run(const std::vector<model::GpuSample>& samples, F&& f) {
  for (size_t begin = 0; begin < samples.size();) {
    size_t end = begin + 1;
    while (end < samples.size() && samples[end].uuid == samples[begin].uuid) ++end;
    f(begin, end);
    begin = end;
  }
}

}  // namespace

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
  std::vector<GpuTelemetry>* kept_of_node = nullptr;  // looked up with the first GPU of the node
  const auto kept_for = [&](const std::string& uuid) -> GpuTelemetry* {
    const auto gpu = std::find_if(node.gpus.begin(), node.gpus.end(),
                                  [&](const model::Gpu& g) { return g.uuid == uuid; });
    if (gpu == node.gpus.end()) return nullptr;  // not this node's GPU
    if (!kept_of_node) {
      kept_of_node = &gpu_telemetry_[node.id];
      kept_of_node->resize(node.gpus.size());
    }
    return &(*kept_of_node)[static_cast<size_t>(gpu - node.gpus.begin())];
  };
  for_each_gpu_run(batch.samples, [&](size_t begin, size_t end) {
    const model::GpuSample* newest = &batch.samples[begin];
    for (size_t i = begin + 1; i < end; ++i) {
      if (batch.samples[i].time_ms >= newest->time_ms) newest = &batch.samples[i];
    }
    GpuTelemetry* kept = kept_for(newest->uuid);
    if (!kept) return;
    if (!kept->latest || kept->latest->time_ms <= newest->time_ms) kept->latest = *newest;
  });
  for (const auto& xid : batch.xids) {
    GpuTelemetry* kept = kept_for(xid.uuid);
    if (!kept) continue;
    ++kept->xid_count;
    if (!kept->last_xid || kept->last_xid->time_ms <= xid.time_ms) kept->last_xid = xid;
    spdlog::warn("gpu_xid node={} gpu={} xid={}", node.id, xid.uuid, xid.code);
  }
  feed_series(node, batch);
}

void Controller::feed_series(const model::Node& node, const model::TelemetryBatch& batch) {
  if (options_.series_fed_by_host) return;  // the host's telemetry thread did (series_feed.h)
  monitor_.series().ingest(node.id, batch);
  monitor_.collect_rollups();
}

const GpuTelemetry* Controller::gpu_telemetry(std::string_view uuid) const {
  const auto owner = node_by_gpu_.find(std::string(uuid));
  if (owner == node_by_gpu_.end()) return nullptr;
  const auto kept = gpu_telemetry_.find(owner->second);
  if (kept == gpu_telemetry_.end()) return nullptr;
  const model::Node& node = nodes_.at(owner->second);
  for (size_t i = 0; i < node.gpus.size() && i < kept->second.size(); ++i) {
    if (node.gpus[i].uuid != uuid) continue;
    const GpuTelemetry& telemetry = kept->second[i];
    return telemetry.latest || telemetry.last_xid ? &telemetry : nullptr;
  }
  return nullptr;
}

}  // namespace gpurent::controller
