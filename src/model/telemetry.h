// GPU telemetry as the agent sends it with its reports (NodeReport::telemetry): one sample per GPU
// per sampling tick, and the GPUs' XID error events.
//
// A field the GPU (or its driver) does not support is absent (nullopt), never zero: a PCIe card
// has no NVLink, a consumer card no ECC. Values are NVML's units: percentages 0-100, MiB,
// degrees C, watts, MHz, KB/s; throttle_reasons is NVML's bitmask (nvmlClocksThrottleReason*,
// the kThrottle* constants below); the ECC counts are the driver's volatile totals.
//
// Wire form (compact: 10,000 nodes x 8 GPUs at 1 Hz is ~80,000 samples a second), columnar per
// GPU within a batch:
//
//   {"gpus": [{"uuid": "GPU-...", "t": [T0, D1, D2, ...],           // T0 ms; then deltas in ms
//              "util": [97, 98, null], "temp": [71, 72, 72], ...}], // one column per field
//    "xids": [{"uuid": "GPU-...", "t": T, "code": 79}],
//    "dropped": N}                                                 // samples the agent dropped
//
// A column is omitted when the field is absent from every sample of that GPU in the batch, and
// has null where one sample lacks it. Column names: see for_each_sample_field below. Samples of one
// GPU keep their order; a batch may hold samples of many ticks (an agent that was disconnected
// replays its backlog).
//
// Bounds: a batch carries at most kMaxTelemetrySamples samples and kMaxTelemetryXids events; the
// server refuses a report with more (400, code "telemetry_too_large"). from_json throws on a
// malformed batch (decode_message turns that into "invalid_message").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"

namespace gpurent::model {

inline constexpr size_t kMaxTelemetrySamples = 2'000;
inline constexpr size_t kMaxTelemetryXids = 256;

// NVML's clock throttle reasons (nvmlClocksThrottleReason*) that the simulator sets.
inline constexpr uint64_t kThrottleGpuIdle = 0x1;
inline constexpr uint64_t kThrottleSwPowerCap = 0x4;
inline constexpr uint64_t kThrottleHwSlowdown = 0x8;
inline constexpr uint64_t kThrottleSwThermalSlowdown = 0x20;
inline constexpr uint64_t kThrottleHwThermalSlowdown = 0x40;

struct GpuSample {
  std::string uuid;
  int64_t time_ms = 0;  // Unix epoch milliseconds
  std::optional<int64_t> gpu_util_pct;
  std::optional<int64_t> mem_util_pct;
  std::optional<int64_t> fb_used_mib;
  std::optional<int64_t> fb_free_mib;
  std::optional<int64_t> temperature_c;
  std::optional<double> power_w;
  std::optional<int64_t> sm_clock_mhz;
  std::optional<int64_t> mem_clock_mhz;
  std::optional<int64_t> pcie_tx_kbps;
  std::optional<int64_t> pcie_rx_kbps;
  std::optional<int64_t> throttle_reasons;
  std::optional<int64_t> ecc_sbe_total;
  std::optional<int64_t> ecc_dbe_total;
  std::optional<int64_t> nvlink_up;
  std::optional<int64_t> nvlink_total;

  bool operator==(const GpuSample&) const = default;
};

struct XidEvent {
  std::string uuid;
  int64_t time_ms = 0;
  int64_t code = 0;  // 79: the GPU fell off the bus; 48: double-bit ECC error; ...

  bool operator==(const XidEvent&) const = default;
};

struct TelemetryBatch {
  std::vector<GpuSample> samples;
  std::vector<XidEvent> xids;
  int64_t dropped = 0;  // samples and events the agent's backlog dropped since it started

  bool empty() const { return samples.empty() && xids.empty(); }
  bool operator==(const TelemetryBatch&) const = default;
};

// Calls f(column, name, member pointer) for every optional field of a sample, in wire order:
// column is the field's wire name ("util"), name its name in views ("gpu_util_pct"). The codec and
// the views iterate this one list, so that they cannot disagree.
template <class F>
void for_each_sample_field(F&& f) {
  f("util", "gpu_util_pct", &GpuSample::gpu_util_pct);
  f("mem_util", "mem_util_pct", &GpuSample::mem_util_pct);
  f("fb_used", "fb_used_mib", &GpuSample::fb_used_mib);
  f("fb_free", "fb_free_mib", &GpuSample::fb_free_mib);
  f("temp", "temperature_c", &GpuSample::temperature_c);
  f("power", "power_w", &GpuSample::power_w);
  f("sm_clock", "sm_clock_mhz", &GpuSample::sm_clock_mhz);
  f("mem_clock", "mem_clock_mhz", &GpuSample::mem_clock_mhz);
  f("pcie_tx", "pcie_tx_kbps", &GpuSample::pcie_tx_kbps);
  f("pcie_rx", "pcie_rx_kbps", &GpuSample::pcie_rx_kbps);
  f("throttle", "throttle_reasons", &GpuSample::throttle_reasons);
  f("ecc_sbe", "ecc_sbe_total", &GpuSample::ecc_sbe_total);
  f("ecc_dbe", "ecc_dbe_total", &GpuSample::ecc_dbe_total);
  f("nvlink_up", "nvlink_up", &GpuSample::nvlink_up);
  f("nvlink_total", "nvlink_total", &GpuSample::nvlink_total);
}

// Error code "telemetry_too_large" when the batch exceeds the bounds above.
Status check_telemetry_bounds(const TelemetryBatch& batch);

void to_json(Json& j, const TelemetryBatch& v);
void from_json(const Json& j, TelemetryBatch& v);

}  // namespace gpurent::model
