// Controller members for the GPU telemetry of node reports (gpu_telemetry.h).
#include <spdlog/spdlog.h>

#include <algorithm>

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
}

const GpuTelemetry* Controller::gpu_telemetry(std::string_view uuid) const {
  const auto it = gpu_telemetry_.find(uuid);
  return it == gpu_telemetry_.end() ? nullptr : &it->second;
}

}  // namespace gpurent::controller
