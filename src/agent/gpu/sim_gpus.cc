#include "agent/gpu/sim_gpus.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "agent/files.h"
#include "common/json.h"
#include "common/random.h"
#include "model/gpu_catalog.h"

namespace gpurent::agent {
namespace {

constexpr std::string_view kUuidFile = "sim_gpus.json";
// parse_sim_gpu_spec allows 64 per group; a spec with more GPUs in all is a mistake, not a node.
constexpr size_t kMaxSimGpus = 256;

std::string random_uuid(Rng& rng) {
  const uint64_t hi = rng.next();
  const uint64_t lo = rng.next();
  return fmt::format("GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff,
                     hi & 0xffff, lo >> 48, lo & 0xffffffffffffULL);
}

// The UUIDs stored for this spec, or nothing when the file is absent, unreadable or for another
// spec (all of which mean: draw new ones).
std::vector<std::string> stored_uuids(const std::filesystem::path& file, std::string_view spec,
                                      size_t count) {
  auto text = read_file(file);
  if (!text) return {};
  auto json = parse_json_object(*text);
  if (!json) return {};
  const auto uuids = optional_string_list(*json, "uuids", kMaxSimGpus, 64);
  const auto stored_spec = optional_string(*json, "spec", 1024);
  if (!uuids || !stored_spec || *stored_spec != spec || uuids->size() != count) return {};
  return *uuids;
}

}  // namespace

Result<std::vector<model::Gpu>> simulated_gpus(std::string_view spec,
                                               const std::filesystem::path& data_dir) {
  std::string why;
  const auto groups = model::parse_sim_gpu_spec(spec, &why);
  if (!groups) return fail(Error::invalid("invalid_sim_gpus", why));
  std::vector<model::Gpu> gpus;
  for (const auto& group : *groups) {
    const model::GpuType* type = model::find_gpu_type(group.slug);  // parse checked it exists
    for (int i = 0; i < group.count; ++i) {
      if (gpus.size() == kMaxSimGpus) {
        return fail(Error::invalid("invalid_sim_gpus",
                                   fmt::format("more than {} simulated GPUs", kMaxSimGpus)));
      }
      model::Gpu gpu;
      gpu.index = static_cast<int>(gpus.size());
      gpu.type = type->slug;
      gpu.name = type->display_name;
      gpu.memory_mb = type->memory_mb;
      gpus.push_back(std::move(gpu));
    }
  }

  const auto file = data_dir / kUuidFile;
  auto uuids = stored_uuids(file, spec, gpus.size());
  if (uuids.empty()) {
    Rng rng(os_random_seed());
    for (size_t i = 0; i < gpus.size(); ++i) uuids.push_back(random_uuid(rng));
    const Json record = {{"spec", spec}, {"uuids", uuids}};
    if (auto written = write_file_atomic(file, record.dump(2) + "\n"); !written) {
      return fail(std::move(written).error());
    }
    spdlog::info("sim_gpus generated spec={} count={} file={}", spec, gpus.size(), file.string());
  }
  for (size_t i = 0; i < gpus.size(); ++i) gpus[i].uuid = uuids[i];
  return gpus;
}

}  // namespace gpurent::agent
