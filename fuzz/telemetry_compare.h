// Comparing telemetry batches across a trip through the frame (model/telemetry.h), for the
// harnesses that read frames.
//
// The frame groups a batch's samples by GPU in order of first appearance, so a batch read from a
// frame that names a GPU twice comes back grouped (by design). Power travels as an integer of
// tenths of a watt and reads back as that integer / 10: a value that no NVML reading comes near
// (more than 1e14 W) may lose a tenth in doubles, and one above the encoder's 1e15 W bound is sent
// as absent. Everything else comes back exactly.
#pragma once

#include <cmath>
#include <map>
#include <string_view>
#include <vector>

#include "model/telemetry.h"

namespace gpurent::fuzz {

// The batch as a frame carries it: samples grouped by GPU, in order of first appearance.
inline model::TelemetryBatch grouped(const model::TelemetryBatch& batch) {
  model::TelemetryBatch out;
  out.xids = batch.xids;
  out.dropped = batch.dropped;
  std::map<std::string_view, size_t> group_of;  // uuid -> its group, in order of appearance
  std::vector<std::vector<const model::GpuSample*>> groups;
  for (const auto& sample : batch.samples) {
    const auto [it, added] = group_of.try_emplace(sample.uuid, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(&sample);
  }
  for (const auto& group : groups) {
    for (const auto* sample : group) out.samples.push_back(*sample);
  }
  return out;
}

inline bool same_power(const std::optional<double>& a, const std::optional<double>& b) {
  const auto huge = [](const std::optional<double>& p) { return p && !(std::abs(*p) <= 1e14); };
  if (huge(a) || huge(b)) return true;  // see above
  return a == b;
}

// Whether `after` is what a trip through the frame makes of `before`.
inline bool same_after_trip(const model::TelemetryBatch& before,
                            const model::TelemetryBatch& after) {
  const model::TelemetryBatch want = grouped(before);
  if (want.xids != after.xids || want.dropped != after.dropped ||
      want.samples.size() != after.samples.size()) {
    return false;
  }
  for (size_t i = 0; i < want.samples.size(); ++i) {
    model::GpuSample a = want.samples[i];
    model::GpuSample b = after.samples[i];
    if (!same_power(a.power_w, b.power_w)) return false;
    a.power_w.reset();
    b.power_w.reset();
    if (!(a == b)) return false;
  }
  return true;
}

}  // namespace gpurent::fuzz
