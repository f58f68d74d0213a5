// GPU telemetry as the agent sends it with its reports (NodeReport::telemetry): one sample per GPU
// per sampling tick, and the GPUs' XID error events.
//
// A field the GPU (or its driver) does not support is absent (nullopt), never zero: a PCIe card
// has no NVLink, a consumer card no ECC. Values are NVML's units: percentages 0-100, MiB,
// degrees C, watts, MHz, KB/s; throttle_reasons is NVML's bitmask (nvmlClocksThrottleReason*,
// the kThrottle* constants below); the ECC counts are the driver's volatile totals.
//
// Wire form: NodeReport's "telemetry" member is a JSON string, the base64 (RFC 4648, padded) of
// one binary frame: 10,000 nodes x 8 GPUs at 1 Hz is 80,000 samples a second, too many to build a
// JSON tree for each. The frame decodes without a tree, and a GPU's UUID and first values are
// paid once per batch, the rest as deltas.
//
//   frame  := version:u8 (kTelemetryFrameVersion)  dropped:uvarint
//             gpus:uvarint gpu*  xids:uvarint xid*
//   gpu    := uuid:str  n:uvarint  fields:uvarint  gaps:uvarint  time*n  column*
//   time   := svarint: the first sample's time (Unix ms), then each one's minus the previous one's
//   column := for each field (for_each_sample_field order; bit i of `fields` says field i is in
//             some sample of the GPU, bit i of `gaps` that some sample lacks it):
//             [presence: ceil(n/8) bytes, bit j of byte j/8 set when sample j has it; only when the
//             gaps bit is set]  value*: one svarint per sample that has it, the value minus the
//             previous value of the column (the first minus 0), in two's complement (wrapping)
//   xid    := uuid:str  time_ms:svarint  code:svarint
//   str    := length:uvarint bytes (at most kMaxTelemetryUuidBytes)
//   uvarint: LEB128; svarint: LEB128 of the zigzag encoding
//
// power_w travels as an integer of tenths of a watt (the sources read NVML's milliwatts and round
// to 0.1 W, so nothing is lost); a non-finite power is sent as absent. Samples of one GPU keep
// their order; a batch may hold samples of many ticks (an agent that was disconnected replays its
// backlog), grouped by GPU in order of first appearance.
//
// Versions: the frame's first byte is checked; an agent that sends another version, or the JSON
// column form of agents before it (an object instead of a string), has its report refused (400
// "invalid_message", saying to upgrade the agent): agent and server are upgraded together.
//
// Bounds: a batch carries at most kMaxTelemetrySamples samples and kMaxTelemetryXids events; the
// server refuses a report with more (400, code "telemetry_too_large"): decoding stops as soon as
// the bound is passed, so a huge frame is never all in memory. from_json throws on a malformed
// frame (decode_message turns that into "invalid_message").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/json_writer.h"
#include "common/result.h"

namespace gpurent::model {

inline constexpr size_t kMaxTelemetrySamples = 2'000;
inline constexpr size_t kMaxTelemetryXids = 256;
inline constexpr size_t kMaxTelemetryUuidBytes = 128;
inline constexpr uint8_t kTelemetryFrameVersion = 2;  // 1: the JSON column form

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

// The binary frame described above, and back. decode_telemetry_frame: code "invalid_message" for a
// malformed frame or another version; a batch past the bounds stops one sample or event past them.
std::string encode_telemetry_frame(const TelemetryBatch& batch);
Result<TelemetryBatch> decode_telemetry_frame(std::string_view frame);

// The frame as base64 text (NodeReport's "telemetry" member), and back: code "invalid_message"
// for bad base64 or a bad frame.
std::string telemetry_text(const TelemetryBatch& batch);
Result<TelemetryBatch> decode_telemetry_text(std::string_view base64);
// Why a "telemetry" member that is not a string is refused.
inline constexpr std::string_view kTelemetryIsAFrame =
    "telemetry must be a base64 frame (model/telemetry.h); the JSON column form of older agents "
    "is not read: upgrade the agent";

// The base64 string of the frame: in nlohmann's tree and in the direct writer
// (common/json_writer.h).
void to_json(Json& j, const TelemetryBatch& v);
void from_json(const Json& j, TelemetryBatch& v);
void write_json(JsonWriter& writer, const TelemetryBatch& v);
// Nothing to send: no sample, no event, nothing dropped (what a report leaves out, field_table.h).
inline bool is_empty(const TelemetryBatch& v) { return v.empty() && v.dropped == 0; }

}  // namespace gpurent::model
