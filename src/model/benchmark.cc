#include "model/benchmark.h"

#include <array>
#include <utility>

namespace gpurent::model {
namespace {

constexpr std::array<std::pair<BenchmarkReason, std::string_view>, 4> kReasons{{
    {BenchmarkReason::kJoin, "join"},
    {BenchmarkReason::kReleased, "released"},
    {BenchmarkReason::kOperator, "operator"},
    {BenchmarkReason::kIdle, "idle"},
}};

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

}  // namespace gpurent::model
