#include "model/gpu_catalog.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "common/suggest.h"

namespace gpurent::model {

const std::vector<GpuType>& gpu_catalog() {
  // Default prices are CNY per GPU-hour, in line with Chinese GPU clouds in 2026. They are chosen
  // so that per-second rates are whole micros (price / 3600), which keeps invoices easy to check.
  // Peaks from NVIDIA's datasheets (dense), in the order of PeakPerf: FP32, TF32, FP16, BF16,
  // FP8 TFLOPS; memory, PCIe, NVLink GB/s.
  static const std::vector<GpuType> kCatalog = {
      {"h200-141g",
       "NVIDIA H200 141GB",
       144384,
       25'200'000,
       {67, 494.7, 989.5, 989.5, 1979, 4800, 64, 450}},
      {"h100-80g",
       "NVIDIA H100 80GB",
       81920,
       18'000'000,
       {67, 494.7, 989.5, 989.5, 1979, 3350, 64, 450}},
      {"h800-80g",
       "NVIDIA H800 80GB",
       81920,
       16'200'000,
       {67, 494.7, 989.5, 989.5, 1979, 3350, 64, 200}},
      {"a100-80g", "NVIDIA A100 80GB", 81920, 10'800'000, {19.5, 156, 312, 312, 0, 2039, 32, 300}},
      {"a100-40g", "NVIDIA A100 40GB", 40960, 7'200'000, {19.5, 156, 312, 312, 0, 1555, 32, 300}},
      {"a800-80g", "NVIDIA A800 80GB", 81920, 9'000'000, {19.5, 156, 312, 312, 0, 2039, 32, 200}},
      {"l40s-48g", "NVIDIA L40S 48GB", 49152, 6'120'000, {91.6, 183, 362, 362, 733, 864, 32, 0}},
      {"a6000-48g",
       "NVIDIA RTX A6000 48GB",
       49152,
       4'320'000,
       {38.7, 77.4, 154.8, 154.8, 0, 768, 32, 56}},
      {"l4-24g", "NVIDIA L4 24GB", 24576, 2'880'000, {30.3, 60, 121, 121, 242, 300, 32, 0}},
      {"a10-24g", "NVIDIA A10 24GB", 24576, 2'520'000, {31.2, 62.5, 125, 125, 0, 600, 32, 0}},
      {"rtx4090-24g",
       "NVIDIA GeForce RTX 4090 24GB",
       24576,
       2'160'000,
       {82.6, 82.6, 165.2, 165.2, 330.3, 1008, 32, 0}},
      {"rtx3090-24g",
       "NVIDIA GeForce RTX 3090 24GB",
       24576,
       1'440'000,
       {35.6, 35.6, 71, 71, 0, 936, 32, 56}},
      {"v100-32g", "NVIDIA V100 32GB", 32768, 1'800'000, {15.7, 0, 125, 0, 0, 900, 16, 150}},
      {"t4-16g", "NVIDIA T4 16GB", 16384, 720'000, {8.1, 0, 65, 0, 0, 320, 16, 0}},
  };
  return kCatalog;
}

const GpuType* find_gpu_type(std::string_view slug) {
  for (const auto& type : gpu_catalog()) {
    if (type.slug == slug) return &type;
  }
  return nullptr;
}

std::string unknown_gpu_type_message(std::string_view type) {
  constexpr size_t kMaxEdits = 3;
  std::vector<std::string_view> slugs;
  for (const auto& known : gpu_catalog()) slugs.push_back(known.slug);
  return fmt::format(
      "unknown GPU type '{}'{} (`gpurent offers` lists the types, as GET /v1/gpu-types does)", type,
      did_you_mean(closest_names(type, slugs, kMaxEdits)));
}

std::string gpu_type_slug_for(std::string_view device_name, int64_t memory_mb) {
  std::string lower;
  for (char c : device_name)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  // Nominal size: drivers report a little less than the marketing figure (81559 MiB for 80 GB).
  const int64_t gigabytes = (memory_mb + 1023) / 1024;
  struct Pattern {
    std::string_view needle;
    std::string_view model;
  };
  static constexpr Pattern kPatterns[] = {
      {"h200", "h200"}, {"h100", "h100"},        {"h800", "h800"},        {"a100", "a100"},
      {"a800", "a800"}, {"l40s", "l40s"},        {"rtx a6000", "a6000"},  {"l4", "l4"},
      {"a10", "a10"},   {"rtx 4090", "rtx4090"}, {"rtx 3090", "rtx3090"}, {"v100", "v100"},
      {"t4", "t4"},
  };
  for (const auto& pattern : kPatterns) {
    if (lower.find(pattern.needle) == std::string::npos) continue;
    // Prefer the catalog entry of this model whose memory is closest to what was reported.
    const GpuType* best = nullptr;
    for (const auto& type : gpu_catalog()) {
      if (!type.slug.starts_with(std::string(pattern.model) + "-")) continue;
      if (!best ||
          std::llabs(type.memory_mb - memory_mb) < std::llabs(best->memory_mb - memory_mb)) {
        best = &type;
      }
    }
    if (best && std::llabs(best->memory_mb - memory_mb) * 10 <= best->memory_mb) return best->slug;
    return fmt::format("{}-{}g", pattern.model, gigabytes);
  }
  std::string slug;
  for (char c : lower) {
    if (std::isalnum(static_cast<unsigned char>(c))) slug.push_back(c);
  }
  if (slug.starts_with("nvidia")) slug.erase(0, 6);
  if (slug.empty()) slug = "gpu";
  return fmt::format("{}-{}g", slug, gigabytes);
}

std::optional<std::vector<SimGpuGroup>> parse_sim_gpu_spec(std::string_view spec,
                                                           std::string* error) {
  std::vector<SimGpuGroup> groups;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    std::string_view item = spec.substr(start, comma - start);
    start = comma + 1;
    SimGpuGroup group{std::string(item), 1};
    if (const size_t x = item.find('x'); x != std::string_view::npos && x > 0 &&
                                         std::all_of(item.begin(), item.begin() + x, ::isdigit)) {
      std::from_chars(item.data(), item.data() + x, group.count);
      group.slug = std::string(item.substr(x + 1));
    }
    if (group.count < 1 || group.count > 64 || !find_gpu_type(group.slug)) {
      if (error) {
        *error =
            fmt::format("'{}' is not COUNTxTYPE with a known GPU type (e.g. 8xh100-80g)", item);
      }
      return std::nullopt;
    }
    groups.push_back(std::move(group));
    if (comma == spec.size()) break;
  }
  return groups;
}

}  // namespace gpurent::model
