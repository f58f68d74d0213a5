// GPU telemetry from NVML, through the agent's dlopen layer (gpu/nvml_api.h).
//
// Every call is resolved on its own and is optional: a field whose function the driver lacks, or
// that answers NVML_ERROR_NOT_SUPPORTED (or any other error), is absent from the sample. A GPU that
// answers NVML_ERROR_GPU_IS_LOST to the utilisation query yields no sample (it fell off the bus).
// Per GPU and tick:
//   utilisation (nvmlDeviceGetUtilizationRates), framebuffer used/free (GetMemoryInfo, bytes to
//   MiB), temperature (GetTemperature, GPU sensor), power (GetPowerUsage, mW to W rounded to 0.1),
//   SM and memory clocks (GetClockInfo), PCIe tx/rx KB/s (GetPcieThroughput), throttle reasons
//   (GetCurrentClocksEventReasons, else the older GetCurrentClocksThrottleReasons), volatile ECC
//   totals (GetTotalEccErrors: corrected = single-bit, uncorrected = double-bit), NVLink links up
//   and total (GetNvLinkState per link until INVALID_ARGUMENT; absent when link 0 is unsupported).
// XID events: at open, one event set (nvmlEventSetCreate) with every GPU registered for
// nvmlEventTypeXidCriticalError (nvmlDeviceRegisterEvents; a GPU that refuses is skipped); each
// tick drains it with nvmlEventSetWait_v2 (else nvmlEventSetWait) and a zero timeout, so sampling
// never blocks.
// A GPU NVML does not know (passed through to a VM: bound to vfio-pci, it has left the host's
// driver) has no handle and no sample; with nvmlDeviceGetHandleByUUID at hand, it is looked for
// again at every tick, and so is a GPU that answers NVML_ERROR_GPU_IS_LOST (its handle dropped),
// so that a GPU the VM gave back reports again (and is registered for XID events then).
//
// Not thread-safe: one owner (the agent's reconcile thread).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/gpu/nvml.h"
#include "agent/gpu/nvml_api.h"
#include "agent/telemetry/source.h"
#include "common/result.h"
#include "model/node.h"

namespace gpurent::agent {

namespace nvml {
struct nvmlEventSet_st;
using nvmlEventSet_t = nvmlEventSet_st*;
struct nvmlUtilization_t {
  unsigned gpu;  // percent
  unsigned memory;
};
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long event_type;
  unsigned long long event_data;  // the XID for nvmlEventTypeXidCriticalError (999: unknown)
  unsigned gpu_instance_id;
  unsigned compute_instance_id;
};
constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8;
constexpr int NVML_TEMPERATURE_GPU = 0;
constexpr int NVML_CLOCK_SM = 1;
constexpr int NVML_CLOCK_MEM = 2;
constexpr int NVML_PCIE_UTIL_TX_BYTES = 0;
constexpr int NVML_PCIE_UTIL_RX_BYTES = 1;
constexpr int NVML_MEMORY_ERROR_TYPE_CORRECTED = 0;
constexpr int NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1;
constexpr int NVML_VOLATILE_ECC = 0;
}  // namespace nvml

// The telemetry calls; any may be nullptr (the driver lacks it). C enums are passed as int.
struct NvmlTelemetryApi {
  using R = nvml::nvmlReturn_t;
  using D = nvml::nvmlDevice_t;
  R (*utilization_rates)(D, nvml::nvmlUtilization_t*) = nullptr;
  R (*memory_info)(D, nvml::nvmlMemory_t*) = nullptr;
  R (*temperature)(D, int sensor, unsigned*) = nullptr;
  R (*power_usage)(D, unsigned* milliwatts) = nullptr;
  R (*clock_info)(D, int type, unsigned* mhz) = nullptr;
  R (*pcie_throughput)(D, int counter, unsigned* kb_per_s) = nullptr;
  R (*throttle_reasons)(D, unsigned long long*) = nullptr;
  R (*total_ecc_errors)(D, int error_type, int counter_type, unsigned long long*) = nullptr;
  R (*nvlink_state)(D, unsigned link, int* active) = nullptr;
  R (*event_set_create)(nvml::nvmlEventSet_t*) = nullptr;
  R (*register_events)(D, unsigned long long types, nvml::nvmlEventSet_t) = nullptr;
  R (*event_set_wait)(nvml::nvmlEventSet_t, nvml::nvmlEventData_t*, unsigned timeout_ms) = nullptr;
  R (*event_set_free)(nvml::nvmlEventSet_t) = nullptr;
  R (*handle_by_uuid)(const char* uuid, D*) = nullptr;
};

struct NvmlGpuHandle {
  std::string uuid;
  nvml::nvmlDevice_t device = nullptr;  // nullptr: NVML does not know it now
};

class NvmlTelemetrySource final : public TelemetrySource {
 public:
  // on_close runs after the event set is freed (it shuts NVML down and unloads it).
  NvmlTelemetrySource(const NvmlTelemetryApi& api, std::vector<NvmlGpuHandle> gpus,
                      std::function<void()> on_close = {});
  ~NvmlTelemetrySource() override;
  NvmlTelemetrySource(const NvmlTelemetrySource&) = delete;
  NvmlTelemetrySource& operator=(const NvmlTelemetrySource&) = delete;

  void sample(int64_t time_ms, const BusyGpus& busy, model::TelemetryBatch& out) override;

 private:
  // The GPU's handle, looked up by its UUID when it has none; registered for XID events then.
  bool resolve(NvmlGpuHandle& gpu);

  const NvmlTelemetryApi api_;
  std::vector<NvmlGpuHandle> gpus_;
  std::function<void()> on_close_;
  nvml::nvmlEventSet_t events_ = nullptr;
};

// Loads and initialises NVML (kept loaded while the source lives) and finds each GPU by UUID
// (nvmlDeviceGetHandleByUUID; one it does not find now is looked for at each tick). Errors:
// "nvml_unavailable" as discover_nvml_gpus.
Result<std::unique_ptr<TelemetrySource>> open_nvml_telemetry(const std::vector<model::Gpu>& gpus,
                                                             const char* library = kNvmlLibrary);

}  // namespace gpurent::agent
