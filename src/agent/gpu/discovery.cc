#include "agent/gpu/discovery.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "agent/gpu/sim_gpus.h"
#include "agent/vm/vfio.h"
#include "common/files.h"
#include "common/json.h"
#include "model/agent_protocol.h"

namespace gpurent::agent {
namespace {

// The last real inventory: what a GPU passed through to a VM is known by while NVML cannot see it.
constexpr std::string_view kRecordFile = "gpus.json";
constexpr size_t kMaxRecordBytes = 1 << 20;

Result<GpuInventory> simulate(std::string_view spec, const std::filesystem::path& data_dir) {
  GPURENT_TRY(gpus, simulated_gpus(spec, data_dir));
  spdlog::info("gpu_discovery source=simulated spec={} count={}", spec, gpus.size());
  return GpuInventory{std::move(gpus), true};
}

// The recorded GPUs; none when there is no record (a first start) or it cannot be read.
std::vector<model::Gpu> recorded_gpus(const std::filesystem::path& data_dir) {
  const auto text = read_file(data_dir / kRecordFile, kMaxRecordBytes);
  if (!text) return {};
  const Json record = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  const auto listed = record.is_object() ? record.find("gpus") : record.end();
  if (listed == record.end() || !listed->is_array()) {
    spdlog::warn("gpu_record_unreadable file={}", (data_dir / kRecordFile).string());
    return {};
  }
  std::vector<model::Gpu> gpus;
  for (const auto& item : *listed) {
    if (auto gpu = model::decode_message<model::Gpu>(item)) gpus.push_back(std::move(*gpu));
  }
  return gpus;
}

}  // namespace

Result<GpuInventory> discover_gpus(std::string_view sim_spec, const std::filesystem::path& data_dir,
                                   const char* nvml_library, const std::filesystem::path& sysfs) {
  if (!sim_spec.empty()) return simulate(sim_spec, data_dir);
  auto real = discover_nvml_gpus(nvml_library);
  std::vector<model::Gpu> gpus = real ? std::move(*real) : std::vector<model::Gpu>();
  for (const auto& gpu : gpus) {
    spdlog::info("gpu_discovery source=nvml index={} uuid={} name=\"{}\" memory_mb={} type={}",
                 gpu.index, gpu.uuid, gpu.name, gpu.memory_mb, gpu.type);
  }
  for (auto& gpu : recorded_gpus(data_dir)) {
    if (std::ranges::find(gpus, gpu.uuid, &model::Gpu::uuid) != gpus.end() ||
        !bound_to_vfio(sysfs, gpu.pci_address)) {
      continue;
    }
    spdlog::info(
        "gpu_discovery source=record index={} uuid={} pci_address={} reason=\"bound to "
        "vfio-pci: in a VM\"",
        gpu.index, gpu.uuid, gpu.pci_address);
    gpus.push_back(std::move(gpu));
  }
  if (!gpus.empty()) {
    std::ranges::sort(gpus, {}, &model::Gpu::index);
    if (auto kept = write_file_atomic(data_dir / kRecordFile, Json{{"gpus", gpus}}.dump(2) + "\n");
        !kept) {
      spdlog::warn("gpu_record_not_written error=\"{}\"", kept.error().message);
    }
    return GpuInventory{std::move(gpus), false};
  }
  spdlog::info("gpu_discovery nvml_unused reason=\"{}\" fallback={}",
               real ? "NVML reports no GPUs" : real.error().message, kDefaultSimGpus);
  return simulate(kDefaultSimGpus, data_dir);
}

}  // namespace gpurent::agent
