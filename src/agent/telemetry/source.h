// Where GPU telemetry comes from: NVML on a real host (nvml_source.h), the simulator otherwise
// (sim_source.h). The agent calls sample() once per tick (telemetry.h).
//
// Not thread-safe: one owner (the agent's reconcile thread, or a simulated node's coroutine).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "model/telemetry.h"

namespace gpurent::agent {

// The GPUs that running workloads hold: GPU UUID -> the holder's instance id. Only the simulator
// looks at it (a real GPU's load is what the hardware says).
using BusyGpus = std::map<std::string, std::string, std::less<>>;

class TelemetrySource {
 public:
  virtual ~TelemetrySource() = default;
  // Appends one sample per GPU that answers (a GPU that fell off the bus yields none) taken at
  // time_ms, and the XID events that arrived since the last call.
  virtual void sample(int64_t time_ms, const BusyGpus& busy, model::TelemetryBatch& out) = 0;
};

}  // namespace gpurent::agent
