#include "monitor/gpu_metrics.h"

namespace gpurent::monitor {

const std::array<MetricInfo, kMetricCount>& metric_table() {
  // PCIe: dcgm-exporter's NVML-sourced fields are DCGM_FI_DEV_PCIE_{TX,RX}_THROUGHPUT, in KB as
  // NVML reports them; DCGM_FI_PROF_PCIE_{TX,RX}_BYTES are profiling fields in bytes/s that need
  // DCGM's profiling module, which the agent does not use.
  static constexpr std::array<MetricInfo, kMetricCount> kTable = {{
      {Metric::kGpuUtil, "gpu_util", "DCGM_FI_DEV_GPU_UTIL", "%", MetricType::kGauge,
       "GPU utilization (in %)."},
      {Metric::kMemCopyUtil, "mem_copy_util", "DCGM_FI_DEV_MEM_COPY_UTIL", "%", MetricType::kGauge,
       "Memory utilization (in %)."},
      {Metric::kFbUsed, "fb_used", "DCGM_FI_DEV_FB_USED", "MiB", MetricType::kGauge,
       "Framebuffer memory used (in MiB)."},
      {Metric::kFbFree, "fb_free", "DCGM_FI_DEV_FB_FREE", "MiB", MetricType::kGauge,
       "Framebuffer memory free (in MiB)."},
      {Metric::kGpuTemp, "gpu_temp", "DCGM_FI_DEV_GPU_TEMP", "C", MetricType::kGauge,
       "GPU temperature (in C)."},
      {Metric::kPowerUsage, "power_usage", "DCGM_FI_DEV_POWER_USAGE", "W", MetricType::kGauge,
       "Power draw (in W)."},
      {Metric::kSmClock, "sm_clock", "DCGM_FI_DEV_SM_CLOCK", "MHz", MetricType::kGauge,
       "SM clock frequency (in MHz)."},
      {Metric::kMemClock, "mem_clock", "DCGM_FI_DEV_MEM_CLOCK", "MHz", MetricType::kGauge,
       "Memory clock frequency (in MHz)."},
      {Metric::kPcieTx, "pcie_tx", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "KB/s", MetricType::kGauge,
       "PCIe transmit throughput (in KB/s) via NVML."},
      {Metric::kPcieRx, "pcie_rx", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "KB/s", MetricType::kGauge,
       "PCIe receive throughput (in KB/s) via NVML."},
      {Metric::kEccSbe, "ecc_sbe", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "", MetricType::kCounter,
       "Total number of single-bit volatile ECC errors."},
      {Metric::kEccDbe, "ecc_dbe", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "", MetricType::kCounter,
       "Total number of double-bit volatile ECC errors."},
      {Metric::kXidErrors, "xid_errors", "DCGM_FI_DEV_XID_ERRORS", "", MetricType::kGauge,
       "Value of the last XID error encountered."},
  }};
  return kTable;
}

std::optional<Metric> parse_metric(std::string_view text) {
  for (const MetricInfo& info : metric_table()) {
    if (text == info.name || text == info.dcgm_name) return info.metric;
  }
  return std::nullopt;
}

}  // namespace gpurent::monitor
