// What a simulation run reports, in one shape for every mode (fill now, time-based replay later),
// and its JSON form: fields a mode does not measure are null, so readers see one schema.
//
// The JSON is a pure function of the report: keys sorted, percentages rounded to 4 decimals, so
// the same run gives the same bytes. decisions_per_sec is wall clock and therefore the one field
// that differs between runs; to_json leaves it out when asked (--no-timing).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"

namespace gpurent::sim {

// The cluster right after arrived workload first reached arrived_pct % of GPU capacity.
struct CurvePoint {
  int arrived_pct = 0;
  double allocated_gpu_pct = 0;
  double fragmented_gpu_pct = 0;
};

struct Percentiles {
  double p50 = 0;
  double p99 = 0;
};

struct SimReport {
  std::string mode;    // "fill" or "replay"
  std::string policy;  // sched::to_string(Policy)
  uint64_t seed = 0;
  std::optional<double> fill;  // fill mode: the target, × GPU capacity
  bool shuffle = false;

  int64_t nodes = 0;
  int64_t gpu_milli_capacity = 0;
  int64_t work_items = 0;      // in the input
  int64_t profile_shapes = 0;  // request shapes in the scoring profile
  int64_t decisions = 0;       // requests offered to the scheduler (fill: with duplicates)
  int64_t placed = 0;
  int64_t failed = 0;
  int64_t preempted = 0;

  double gpu_allocation_pct = 0;                           // at the end
  std::optional<double> gpu_allocation_pct_time_averaged;  // replay
  // Fill mode, read right after arrived workload reached 100 % of capacity; null if it never
  // did.
  std::optional<double> unallocated_gpu_pct_at_100;
  std::optional<double> fragmented_gpu_pct;
  std::optional<Percentiles> wait_s;  // replay
  std::vector<CurvePoint> curve;      // fill mode: one point per whole arrived percent

  int64_t invariant_checks = 0;  // a report exists only if every one of them passed
  double decisions_per_sec = 0;  // wall clock of the placement calls only
  // Fill mode: the mean wall clock of a decision that placed and of one that refused, in µs.
  std::optional<double> placed_decision_us;
  std::optional<double> refused_decision_us;
};

Json to_json(const SimReport& report, bool include_timing);

}  // namespace gpurent::sim
