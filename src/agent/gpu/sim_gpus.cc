#include "agent/gpu/sim_gpus.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

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

// The SXM types: their GPUs sit on one baseboard joined by NVSwitch (HGX, DGX). Any other type is a
// PCIe card without NVLink.
constexpr std::string_view kNvSwitchTypes[] = {"h200-141g", "h100-80g", "h800-80g", "a100-80g",
                                               "a100-40g",  "a800-80g", "v100-32g"};
constexpr int kGpusPerPcieSwitch = 2;

struct Group {
  std::string slug;
  int count = 0;
  int nvlink_domains = 0;
};

// One COUNTxTYPE[:nvlink=D] item per comma; COUNTxTYPE is the catalog's grammar.
Result<std::vector<Group>> parse_groups(std::string_view spec) {
  const auto invalid = [](std::string why) {
    return fail(Error::invalid("invalid_sim_gpus", why));
  };
  std::vector<Group> groups;
  size_t start = 0;
  while (true) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string_view item = spec.substr(start, comma - start);
    const size_t colon = item.find(':');
    std::string why;
    const auto parsed = model::parse_sim_gpu_spec(item.substr(0, colon), &why);
    if (!parsed) return invalid(why);
    Group group{parsed->front().slug, parsed->front().count, 0};
    const bool nvswitch = std::find(std::begin(kNvSwitchTypes), std::end(kNvSwitchTypes),
                                    group.slug) != std::end(kNvSwitchTypes);
    group.nvlink_domains = nvswitch ? 1 : group.count;
    if (colon != std::string_view::npos) {
      constexpr std::string_view kOption = "nvlink=";
      const std::string_view option = item.substr(colon + 1);
      const std::string_view value = option.substr(std::min(option.size(), kOption.size()));
      const auto [end, error] =
          std::from_chars(value.data(), value.data() + value.size(), group.nvlink_domains);
      if (!option.starts_with(kOption) || error != std::errc() ||
          end != value.data() + value.size() || group.nvlink_domains < 1 ||
          group.count % group.nvlink_domains != 0) {
        return invalid(fmt::format(
            "'{}': the option must be nvlink=D, with D dividing the GPU count (e.g. 8xh100-80g:"
            "nvlink=2)",
            item));
      }
    }
    groups.push_back(std::move(group));
    if (comma == spec.size()) break;
    start = comma + 1;
  }
  return groups;
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

Result<std::vector<model::Gpu>> sim_gpu_layout(std::string_view spec) {
  GPURENT_TRY(groups, parse_groups(spec));
  std::vector<model::Gpu> gpus;
  int domains_so_far = 0;
  int switches_so_far = 0;
  for (const auto& group : groups) {
    const model::GpuType* type = model::find_gpu_type(group.slug);  // parse checked it exists
    if (gpus.size() + static_cast<size_t>(group.count) > kMaxSimGpus) {
      return fail(Error::invalid("invalid_sim_gpus",
                                 fmt::format("more than {} simulated GPUs", kMaxSimGpus)));
    }
    const int per_domain = group.count / group.nvlink_domains;
    for (int i = 0; i < group.count; ++i) {
      model::Gpu gpu;
      gpu.index = static_cast<int>(gpus.size());
      gpu.type = type->slug;
      gpu.name = type->display_name;
      gpu.memory_mb = type->memory_mb;
      gpu.nvlink_domain = domains_so_far + i / per_domain;
      gpu.pcie_switch = switches_so_far + i / kGpusPerPcieSwitch;
      gpus.push_back(std::move(gpu));
    }
    domains_so_far += group.nvlink_domains;
    switches_so_far += (group.count + kGpusPerPcieSwitch - 1) / kGpusPerPcieSwitch;
  }
  for (auto& gpu : gpus) gpu.numa_node = gpu.index * 2 / static_cast<int>(gpus.size());
  return gpus;
}

Result<std::vector<model::Gpu>> simulated_gpus(std::string_view spec,
                                               const std::filesystem::path& data_dir) {
  GPURENT_TRY(gpus, sim_gpu_layout(spec));
  const auto file = data_dir / kUuidFile;
  auto uuids = stored_uuids(file, spec, gpus.size());
  if (uuids.empty()) {
    Rng rng(os_random_seed());
    for (size_t i = 0; i < gpus.size(); ++i) uuids.push_back(random_uuid(rng));
    const Json record = {{"spec", spec}, {"uuids", uuids}};
    if (auto written = write_file_atomic(file, record.dump(2) + "\n"); !written) {
      return fail(std::move(written).error());
    }
    spdlog::debug("sim_gpus generated spec={} count={} file={}", spec, gpus.size(), file.string());
  }
  for (size_t i = 0; i < gpus.size(); ++i) gpus[i].uuid = uuids[i];
  return gpus;
}

}  // namespace gpurent::agent
