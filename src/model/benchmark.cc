#include "model/benchmark.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "common/json.h"

namespace gpurent::model {
namespace {

constexpr std::array<std::pair<BenchmarkReason, std::string_view>, 4> kReasons{{
    {BenchmarkReason::kJoin, "join"},
    {BenchmarkReason::kReleased, "released"},
    {BenchmarkReason::kOperator, "operator"},
    {BenchmarkReason::kIdle, "idle"},
}};

// The bounds of a training result's figures: what the template's own bounds allow
// (cli/commands_bench.cc), and a throughput no device reaches.
constexpr int kMaxBatch = 4096;
constexpr int kMinImageSize = 32;
constexpr int kMaxImageSize = 1024;
constexpr double kMaxImagesPerSecond = 1e7;
constexpr size_t kMaxDeviceName = 128;

Error invalid_log(std::string_view why) {
  return Error::unprocessable("invalid_benchmark_log", fmt::format("the benchmark's log {}", why));
}

}  // namespace

std::string_view to_string(BenchmarkReason reason) {
  for (const auto& [value, name] : kReasons) {
    if (value == reason) return name;
  }
  return "unknown";
}

bool from_string(std::string_view text, BenchmarkReason* out) {
  for (const auto& [value, name] : kReasons) {
    if (name == text) {
      *out = value;
      return true;
    }
  }
  return false;
}

std::optional<int64_t> training_gflops(const std::map<std::string, int64_t>& gemm_gflops) {
  for (const std::string_view precision : {"bf16", "fp16", "fp32"}) {
    if (const auto it = gemm_gflops.find(std::string(precision)); it != gemm_gflops.end()) {
      return it->second;
    }
  }
  return std::nullopt;
}

Result<TrainingReport> resnet50_report(std::string_view log) {
  std::optional<TrainingReport> report;
  for (size_t start = 0; start < log.size();) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    const std::string_view line = log.substr(start, end - start);
    start = end + 1;
    if (!line.starts_with(kResnet50ResultPrefix)) continue;
    const Json result = Json::parse(line.substr(kResnet50ResultPrefix.size()), nullptr, false);
    if (!result.is_object()) return fail(invalid_log("has a result line that is not JSON"));
    const std::string precision = result.value("precision", "");
    const double images_per_s = result.value("images_per_s", 0.0);
    const int batch = result.value("batch", 0);
    const int image_size = result.value("image_size", 0);
    const std::string device = result.value("device", "");
    const std::string gpu = result.value("gpu", "");
    if (std::ranges::find(kTrainingPrecisions, precision) == kTrainingPrecisions.end()) {
      return fail(invalid_log(fmt::format("names an unknown precision '{}'", precision)));
    }
    if (!std::isfinite(images_per_s) || images_per_s <= 0 || images_per_s > kMaxImagesPerSecond ||
        batch < 1 || batch > kMaxBatch || image_size < kMinImageSize ||
        image_size > kMaxImageSize || device.empty() || device.size() > kMaxDeviceName ||
        gpu.find(',') != std::string::npos) {
      return fail(invalid_log(fmt::format("has an {} result out of range", precision)));
    }
    if (!report) {
      report = TrainingReport{
          .gpu = gpu,
          .run = {.model = "resnet50", .batch = batch, .image_size = image_size, .device = device}};
    } else if (report->gpu != gpu || report->run.batch != batch ||
               report->run.image_size != image_size || report->run.device != device) {
      return fail(invalid_log("has results that disagree on the GPU, batch or image size"));
    }
    report->run.images_per_hour.insert_or_assign(precision, std::llround(images_per_s * 3600));
  }
  for (const std::string_view precision : kTrainingPrecisions) {
    if (!report || !report->run.images_per_hour.contains(std::string(precision))) {
      return fail(invalid_log(fmt::format("has no {} result: the run did not finish", precision)));
    }
  }
  return std::move(*report);
}

}  // namespace gpurent::model
