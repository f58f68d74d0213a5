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

void Controller::record_telemetry(const model::Node& node, const model::TelemetryBatch& batch) {
  const auto on_node = [&](const std::string& uuid) {
    return std::any_of(node.gpus.begin(), node.gpus.end(),
                       [&](const model::Gpu& gpu) { return gpu.uuid == uuid; });
  };
  for_each_gpu_run(batch.samples, [&](size_t begin, size_t end) {
    const model::GpuSample* newest = &batch.samples[begin];
    for (size_t i = begin + 1; i < end; ++i) {
      if (batch.samples[i].time_ms >= newest->time_ms) newest = &batch.samples[i];
    }
    if (!on_node(newest->uuid)) return;
    GpuTelemetry& kept = gpu_telemetry_[newest->uuid];
    if (!kept.latest || kept.latest->time_ms <= newest->time_ms) kept.latest = *newest;
  });
  for (const auto& xid : batch.xids) {
    if (!on_node(xid.uuid)) continue;
    GpuTelemetry& kept = gpu_telemetry_[xid.uuid];
    ++kept.xid_count;
    if (!kept.last_xid || kept.last_xid->time_ms <= xid.time_ms) kept.last_xid = xid;
    spdlog::warn("gpu_xid node={} gpu={} xid={}", node.id, xid.uuid, xid.code);
  }
  feed_series(node, batch);
}

void Controller::feed_series(const model::Node& node, const model::TelemetryBatch& batch) {
  using monitor::Metric;
  std::vector<GpuSamples> gpus;
  for_each_gpu_run(batch.samples, [&](size_t begin, size_t end) {
    GpuSamples& gpu = gpus.emplace_back();
    gpu.uuid = batch.samples[begin].uuid;
    gpu.samples.reserve((end - begin) * 12);
    for (size_t i = begin; i < end; ++i) {
      const model::GpuSample& s = batch.samples[i];
      // Absent fields (not supported by the GPU) make no sample: a gap, not a zero.
      const auto put = [&](Metric metric, const auto& field) {
        if (field) gpu.samples.push_back({metric, s.time_ms, static_cast<double>(*field)});
      };
      put(Metric::kGpuUtil, s.gpu_util_pct);
      put(Metric::kMemCopyUtil, s.mem_util_pct);
      put(Metric::kFbUsed, s.fb_used_mib);
      put(Metric::kFbFree, s.fb_free_mib);
      put(Metric::kGpuTemp, s.temperature_c);
      put(Metric::kPowerUsage, s.power_w);
      put(Metric::kSmClock, s.sm_clock_mhz);
      put(Metric::kMemClock, s.mem_clock_mhz);
      put(Metric::kPcieTx, s.pcie_tx_kbps);
      put(Metric::kPcieRx, s.pcie_rx_kbps);
      put(Metric::kEccSbe, s.ecc_sbe_total);
      put(Metric::kEccDbe, s.ecc_dbe_total);
    }
  });
  // As DCGM reports it: the last XID code seen.
  for (const auto& xid : batch.xids) {
    auto it = std::find_if(gpus.begin(), gpus.end(),
                           [&](const GpuSamples& gpu) { return gpu.uuid == xid.uuid; });
    if (it == gpus.end()) {
      it = gpus.emplace(gpus.end());
      it->uuid = xid.uuid;
    }
    it->samples.push_back({Metric::kXidErrors, xid.time_ms, static_cast<double>(xid.code)});
  }
  if (auto ingested = ingest_gpu_samples(node.id, gpus); !ingested) {
    spdlog::error("telemetry of node={} not kept: {}", node.id, ingested.error().message);
  }
}

const GpuTelemetry* Controller::gpu_telemetry(std::string_view uuid) const {
  const auto it = gpu_telemetry_.find(uuid);
  return it == gpu_telemetry_.end() ? nullptr : &it->second;
}

}  // namespace gpurent::controller
