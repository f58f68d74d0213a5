// What the controller keeps of the GPU telemetry the agents report (model/telemetry.h): per GPU,
// the latest sample and the latest XID event, in memory only. The time series and alerts are
// src/monitor/'s; this is what the node view shows of each GPU now.
//
// A sample is kept only for a GPU of the reporting node (others are ignored: a stale or foreign
// UUID), and only when it is newer than the one kept (a replayed backlog never hides a newer
// sample). Not persisted: after a restart the next report fills it again.
#pragma once

#include <cstdint>
#include <optional>

#include "model/telemetry.h"

namespace gpurent::controller {

struct GpuTelemetry {
  std::optional<model::GpuSample> latest;
  std::optional<model::XidEvent> last_xid;
  int64_t xid_count = 0;  // since the server started
};

}  // namespace gpurent::controller
