// The JSON of a GPU's current telemetry in the node view (GET /v1/nodes/{id}: gpus[].telemetry):
//   {"time": RFC 3339, "gpu_util_pct": 97, "temperature_c": 71, "power_w": 612.5, ...,
//    "last_xid": {"code": 79, "time": ...} | null, "xid_count": N}
// with each sample field by its view name (model::for_each_sample_field), absent when the GPU did
// not report it; null before the GPU's first sample.
#pragma once

#include "common/json.h"
#include "controller/gpu_telemetry.h"

namespace gpurent::server {

Json gpu_telemetry_view(const controller::GpuTelemetry* telemetry);

}  // namespace gpurent::server
