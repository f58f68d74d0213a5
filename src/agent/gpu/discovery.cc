#include "agent/gpu/discovery.h"

#include <spdlog/spdlog.h>

#include "agent/gpu/sim_gpus.h"

namespace gpurent::agent {
namespace {

Result<GpuInventory> simulate(std::string_view spec, const std::filesystem::path& data_dir) {
  GPURENT_TRY(gpus, simulated_gpus(spec, data_dir));
  spdlog::info("gpu_discovery source=simulated spec={} count={}", spec, gpus.size());
  return GpuInventory{std::move(gpus), true};
}

}  // namespace

Result<GpuInventory> discover_gpus(std::string_view sim_spec, const std::filesystem::path& data_dir,
                                   const char* nvml_library) {
  if (!sim_spec.empty()) return simulate(sim_spec, data_dir);
  auto real = discover_nvml_gpus(nvml_library);
  if (real && !real->empty()) {
    for (const auto& gpu : *real) {
      spdlog::info("gpu_discovery source=nvml index={} uuid={} name=\"{}\" memory_mb={} type={}",
                   gpu.index, gpu.uuid, gpu.name, gpu.memory_mb, gpu.type);
    }
    return GpuInventory{std::move(*real), false};
  }
  spdlog::info("gpu_discovery nvml_unused reason=\"{}\" fallback={}",
               real ? "NVML reports no GPUs" : real.error().message, kDefaultSimGpus);
  return simulate(kDefaultSimGpus, data_dir);
}

}  // namespace gpurent::agent
