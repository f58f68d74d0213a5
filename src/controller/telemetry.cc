// Controller members for the GPU telemetry of node reports (gpu_telemetry.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "controller/controller.h"

namespace gpurent::controller {

void Controller::record_telemetry(const model::Node& node, const model::TelemetryBatch& batch) {
  const auto on_node = [&](const std::string& uuid) {
    return std::any_of(node.gpus.begin(), node.gpus.end(),
                       [&](const model::Gpu& gpu) { return gpu.uuid == uuid; });
  };
  for (const auto& sample : batch.samples) {
    if (!on_node(sample.uuid)) continue;
    GpuTelemetry& kept = gpu_telemetry_[sample.uuid];
    if (!kept.latest || kept.latest->time_ms <= sample.time_ms) kept.latest = sample;
  }
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
  std::map<std::string, GpuSamples> by_gpu;
  const auto add = [&](const std::string& uuid, Metric metric, int64_t t_ms, double value) {
    GpuSamples& gpu = by_gpu[uuid];
    gpu.uuid = uuid;
    gpu.samples.push_back({metric, t_ms, value});
  };
  for (const auto& s : batch.samples) {
    // Absent fields (not supported by the GPU) make no sample: a gap, not a zero.
    const auto put = [&](Metric metric, const auto& field) {
      if (field) add(s.uuid, metric, s.time_ms, static_cast<double>(*field));
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
  // As DCGM reports it: the last XID code seen.
  for (const auto& xid : batch.xids) {
    add(xid.uuid, Metric::kXidErrors, xid.time_ms, static_cast<double>(xid.code));
  }
  std::vector<GpuSamples> gpus;
  gpus.reserve(by_gpu.size());
  for (auto& [uuid, samples] : by_gpu) gpus.push_back(std::move(samples));
  if (auto ingested = ingest_gpu_samples(node.id, gpus); !ingested) {
    spdlog::error("telemetry of node={} not kept: {}", node.id, ingested.error().message);
  }
}

const GpuTelemetry* Controller::gpu_telemetry(std::string_view uuid) const {
  const auto it = gpu_telemetry_.find(uuid);
  return it == gpu_telemetry_.end() ? nullptr : &it->second;
}

}  // namespace gpurent::controller
