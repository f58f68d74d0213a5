#include "sim/report.h"

#include <cmath>

namespace gpurent::sim {
namespace {

// Four decimals are far below the run-to-run spread of any figure here and keep the output short.
double rounded(double value) { return std::round(value * 1e4) / 1e4; }

template <class T>
Json optional_json(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

Json optional_pct(const std::optional<double>& value) {
  return value ? Json(rounded(*value)) : Json(nullptr);
}

}  // namespace

Json to_json(const SimReport& report, bool include_timing) {
  Json curve = Json::array();
  for (const CurvePoint& point : report.curve) {
    curve.push_back({{"arrived_pct", point.arrived_pct},
                     {"allocated_gpu_pct", rounded(point.allocated_gpu_pct)},
                     {"fragmented_gpu_pct", rounded(point.fragmented_gpu_pct)}});
  }
  Json out = {
      {"mode", report.mode},
      {"policy", report.policy},
      {"seed", report.seed},
      {"fill", optional_json(report.fill)},
      {"shuffle", report.shuffle},
      {"nodes", report.nodes},
      {"gpus", rounded(static_cast<double>(report.gpu_milli_capacity) / 1000)},
      {"work_items", report.work_items},
      {"profile_shapes", report.profile_shapes},
      {"decisions", report.decisions},
      {"placed", report.placed},
      {"failed", report.failed},
      {"preempted", report.preempted},
      {"gpu_allocation_pct", rounded(report.gpu_allocation_pct)},
      {"gpu_allocation_pct_time_averaged", optional_pct(report.gpu_allocation_pct_time_averaged)},
      {"unallocated_gpu_pct_at_100", optional_pct(report.unallocated_gpu_pct_at_100)},
      {"fragmented_gpu_pct", optional_pct(report.fragmented_gpu_pct)},
      {"wait_s", report.wait_s ? Json{{"p50", report.wait_s->p50}, {"p99", report.wait_s->p99}}
                               : Json(nullptr)},
      {"invariants", {{"checks", report.invariant_checks}, {"result", "ok"}}},
      {"curve", std::move(curve)},
  };
  if (include_timing) {
    out["decisions_per_sec"] = std::llround(report.decisions_per_sec);
    const auto micros = [](const std::optional<double>& us) {
      return us ? Json(std::round(*us * 100) / 100) : Json(nullptr);
    };
    out["placed_decision_us"] = micros(report.placed_decision_us);
    out["refused_decision_us"] = micros(report.refused_decision_us);
  }
  return out;
}

}  // namespace gpurent::sim
