#include "agent/telemetry/nvml_source.h"

#include <fmt/format.h>

#include <cmath>

namespace gpurent::agent {
namespace {

using nvml::NVML_SUCCESS;

// Events drained per tick at most: a storm of XIDs must not stall sampling.
constexpr int kMaxEventsPerTick = 64;

// The value of a call that succeeded, else nullopt (not supported, lacking, or failed).
template <class T, class Fn, class... Args>
std::optional<T> ask(Fn* fn, nvml::nvmlDevice_t device, Args... args) {
  if (!fn) return std::nullopt;
  T value{};
  if (fn(device, args..., &value) != NVML_SUCCESS) return std::nullopt;
  return value;
}

template <class T>
std::optional<int64_t> as_int(std::optional<T> value) {
  if (!value) return std::nullopt;
  return static_cast<int64_t>(*value);
}

}  // namespace

NvmlTelemetrySource::NvmlTelemetrySource(const NvmlTelemetryApi& api,
                                         std::vector<NvmlGpuHandle> gpus,
                                         std::function<void()> on_close)
    : api_(api), gpus_(std::move(gpus)), on_close_(std::move(on_close)) {
  if (!api_.event_set_create || !api_.register_events || !api_.event_set_wait) return;
  if (api_.event_set_create(&events_) != NVML_SUCCESS) {
    events_ = nullptr;
    return;
  }
  for (const auto& gpu : gpus_) {
    // A GPU that cannot deliver XID events (NOT_SUPPORTED) just has none.
    if (gpu.device) api_.register_events(gpu.device, nvml::nvmlEventTypeXidCriticalError, events_);
  }
}

bool NvmlTelemetrySource::resolve(NvmlGpuHandle& gpu) {
  if (gpu.device) return true;
  if (!api_.handle_by_uuid || api_.handle_by_uuid(gpu.uuid.c_str(), &gpu.device) != NVML_SUCCESS) {
    gpu.device = nullptr;
    return false;
  }
  if (events_) api_.register_events(gpu.device, nvml::nvmlEventTypeXidCriticalError, events_);
  return true;
}

NvmlTelemetrySource::~NvmlTelemetrySource() {
  if (events_ && api_.event_set_free) api_.event_set_free(events_);
  if (on_close_) on_close_();
}

void NvmlTelemetrySource::sample(int64_t time_ms, const BusyGpus&, model::TelemetryBatch& out) {
  for (int i = 0; events_ && i < kMaxEventsPerTick; ++i) {
    nvml::nvmlEventData_t event{};
    if (api_.event_set_wait(events_, &event, 0) != NVML_SUCCESS) break;  // TIMEOUT: none left
    if (!(event.event_type & nvml::nvmlEventTypeXidCriticalError)) continue;
    for (const auto& gpu : gpus_) {
      if (!gpu.device || gpu.device != event.device) continue;
      out.xids.push_back({gpu.uuid, time_ms, static_cast<int64_t>(event.event_data)});
      break;
    }
  }
  for (auto& gpu : gpus_) {
    if (!resolve(gpu)) continue;
    model::GpuSample sample{.uuid = gpu.uuid, .time_ms = time_ms};
    if (api_.utilization_rates) {
      nvml::nvmlUtilization_t rates{};
      const auto rc = api_.utilization_rates(gpu.device, &rates);
      if (rc == nvml::NVML_ERROR_GPU_IS_LOST) {
        // Looked for again from the next tick on, where NVML can look (a GPU a VM gives back).
        if (api_.handle_by_uuid) gpu.device = nullptr;
        continue;
      }
      if (rc == NVML_SUCCESS) {
        sample.gpu_util_pct = rates.gpu;
        sample.mem_util_pct = rates.memory;
      }
    }
    if (const auto memory = ask<nvml::nvmlMemory_t>(api_.memory_info, gpu.device)) {
      constexpr unsigned long long kMiB = 1024 * 1024;
      sample.fb_used_mib = static_cast<int64_t>(memory->used / kMiB);
      sample.fb_free_mib = static_cast<int64_t>(memory->free / kMiB);
    }
    sample.temperature_c =
        as_int(ask<unsigned>(api_.temperature, gpu.device, nvml::NVML_TEMPERATURE_GPU));
    if (const auto milliwatts = ask<unsigned>(api_.power_usage, gpu.device)) {
      sample.power_w = std::round(*milliwatts / 100.0) / 10.0;
    }
    sample.sm_clock_mhz = as_int(ask<unsigned>(api_.clock_info, gpu.device, nvml::NVML_CLOCK_SM));
    sample.mem_clock_mhz = as_int(ask<unsigned>(api_.clock_info, gpu.device, nvml::NVML_CLOCK_MEM));
    sample.pcie_tx_kbps =
        as_int(ask<unsigned>(api_.pcie_throughput, gpu.device, nvml::NVML_PCIE_UTIL_TX_BYTES));
    sample.pcie_rx_kbps =
        as_int(ask<unsigned>(api_.pcie_throughput, gpu.device, nvml::NVML_PCIE_UTIL_RX_BYTES));
    sample.throttle_reasons = as_int(ask<unsigned long long>(api_.throttle_reasons, gpu.device));
    sample.ecc_sbe_total = as_int(ask<unsigned long long>(api_.total_ecc_errors, gpu.device,
                                                          nvml::NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                                          nvml::NVML_VOLATILE_ECC));
    sample.ecc_dbe_total = as_int(ask<unsigned long long>(api_.total_ecc_errors, gpu.device,
                                                          nvml::NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                                          nvml::NVML_VOLATILE_ECC));
    if (api_.nvlink_state) {
      int64_t up = 0;
      int64_t total = 0;
      for (unsigned link = 0; link < nvml::kMaxNvLinks; ++link) {
        int active = 0;
        const auto rc = api_.nvlink_state(gpu.device, link, &active);
        if (rc == nvml::NVML_ERROR_INVALID_ARGUMENT || rc == nvml::NVML_ERROR_NOT_SUPPORTED) break;
        if (rc != NVML_SUCCESS) continue;
        ++total;
        if (active == nvml::NVML_FEATURE_ENABLED) ++up;
      }
      if (total > 0) {
        sample.nvlink_up = up;
        sample.nvlink_total = total;
      }
    }
    out.samples.push_back(std::move(sample));
  }
}

Result<std::unique_ptr<TelemetrySource>> open_nvml_telemetry(const std::vector<model::Gpu>& gpus,
                                                             const char* library) {
  auto lib = std::make_shared<nvml::Library>(dlopen(library, RTLD_NOW | RTLD_LOCAL));
  if (!lib->get()) {
    const char* why = dlerror();
    return fail(Error{ErrorKind::kUnavailable, "nvml_unavailable",
                      fmt::format("cannot load {}: {}", library, why ? why : "unknown")});
  }
  void* handle = lib->get();
  nvml::nvmlReturn_t (*init_v2)() = nullptr;
  nvml::nvmlReturn_t (*shutdown)() = nullptr;
  nvml::nvmlReturn_t (*handle_by_uuid)(const char*, nvml::nvmlDevice_t*) = nullptr;
  if (!nvml::bind(handle, "nvmlInit_v2", &init_v2) ||
      !nvml::bind(handle, "nvmlShutdown", &shutdown) ||
      !nvml::bind(handle, "nvmlDeviceGetHandleByUUID", &handle_by_uuid)) {
    return fail(Error{ErrorKind::kUnavailable, "nvml_unavailable",
                      fmt::format("{} lacks the NVML functions gpurent needs", library)});
  }
  NvmlTelemetryApi api;
  nvml::bind(handle, "nvmlDeviceGetUtilizationRates", &api.utilization_rates);
  nvml::bind(handle, "nvmlDeviceGetMemoryInfo", &api.memory_info);
  nvml::bind(handle, "nvmlDeviceGetTemperature", &api.temperature);
  nvml::bind(handle, "nvmlDeviceGetPowerUsage", &api.power_usage);
  nvml::bind(handle, "nvmlDeviceGetClockInfo", &api.clock_info);
  nvml::bind(handle, "nvmlDeviceGetPcieThroughput", &api.pcie_throughput);
  if (!nvml::bind(handle, "nvmlDeviceGetCurrentClocksEventReasons", &api.throttle_reasons)) {
    nvml::bind(handle, "nvmlDeviceGetCurrentClocksThrottleReasons", &api.throttle_reasons);
  }
  nvml::bind(handle, "nvmlDeviceGetTotalEccErrors", &api.total_ecc_errors);
  nvml::bind(handle, "nvmlDeviceGetNvLinkState", &api.nvlink_state);
  nvml::bind(handle, "nvmlEventSetCreate", &api.event_set_create);
  nvml::bind(handle, "nvmlDeviceRegisterEvents", &api.register_events);
  if (!nvml::bind(handle, "nvmlEventSetWait_v2", &api.event_set_wait)) {
    nvml::bind(handle, "nvmlEventSetWait", &api.event_set_wait);
  }
  nvml::bind(handle, "nvmlEventSetFree", &api.event_set_free);
  if (init_v2() != NVML_SUCCESS) {
    return fail(Error{ErrorKind::kUnavailable, "nvml_unavailable", "nvmlInit_v2 failed"});
  }
  api.handle_by_uuid = handle_by_uuid;
  std::vector<NvmlGpuHandle> handles;
  for (const auto& gpu : gpus) {
    nvml::nvmlDevice_t device = nullptr;
    // One NVML does not know now (in a VM) has no handle until it is found at a tick.
    if (handle_by_uuid(gpu.uuid.c_str(), &device) != NVML_SUCCESS) device = nullptr;
    handles.push_back({gpu.uuid, device});
  }
  return std::unique_ptr<TelemetrySource>(std::make_unique<NvmlTelemetrySource>(
      api, std::move(handles), [lib, shutdown] { shutdown(); }));
}

}  // namespace gpurent::agent
