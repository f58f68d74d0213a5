// The GPU metrics that agents report, and their names.
//
// Each metric has a short name (the API's `metric=` parameter, e.g. "gpu_temp"), the name of the
// NVIDIA DCGM exporter field it corresponds to (what `/metrics` exposes, so that dashboards made
// for dcgm-exporter work unchanged), its unit and its Prometheus type. The names were checked
// against dcgm-exporter's etc/default-counters.csv and etc/dcp-metrics-included.csv.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gpurent::monitor {

enum class Metric : uint8_t {
  kGpuUtil,      // GPU utilisation, % (0-100)
  kMemCopyUtil,  // memory (copy engine) utilisation, % (0-100)
  kFbUsed,       // framebuffer used, MiB
  kFbFree,       // framebuffer free, MiB
  kGpuTemp,      // GPU temperature, degrees C
  kPowerUsage,   // power draw, W
  kSmClock,      // SM clock, MHz
  kMemClock,     // memory clock, MHz
  kPcieTx,       // PCIe transmit throughput, KB/s (NVML nvmlDeviceGetPcieThroughput)
  kPcieRx,       // PCIe receive throughput, KB/s
  kEccSbe,       // single-bit volatile ECC errors since the driver loaded (counter)
  kEccDbe,       // double-bit volatile ECC errors since the driver loaded (counter)
  kXidErrors,    // the last XID error code seen, 0 when none (as DCGM reports it)
};
inline constexpr size_t kMetricCount = 13;

enum class MetricType { kGauge, kCounter };

struct MetricInfo {
  Metric metric;
  std::string_view name;       // short, snake_case: the API's name
  std::string_view dcgm_name;  // the dcgm-exporter family name
  std::string_view unit;
  MetricType type;
  std::string_view help;  // the dcgm-exporter help text
};

// In the order of the enum.
const std::array<MetricInfo, kMetricCount>& metric_table();
inline const MetricInfo& metric_info(Metric metric) {
  return metric_table()[static_cast<size_t>(metric)];
}
// Accepts the short name or the DCGM name.
std::optional<Metric> parse_metric(std::string_view text);

}  // namespace gpurent::monitor
