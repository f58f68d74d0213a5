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
#include <vector>

#include "model/telemetry.h"

namespace gpurent::controller {

struct GpuTelemetry {
  std::optional<model::GpuSample> latest;
  std::optional<model::XidEvent> last_xid;
  int64_t xid_count = 0;  // since the server started
};

// Calls f(begin, end) for each run of consecutive samples of one GPU. A decoded batch holds each
// GPU's samples together (model/telemetry.h), so a GPU is looked up once per report, not once per
// sample; a batch in another order is still handled right, in more runs.
template <class F>
void for_each_gpu_run(const std::vector<model::GpuSample>& samples, F&& f) {
  for (size_t begin = 0; begin < samples.size();) {
    size_t end = begin + 1;
    while (end < samples.size() && samples[end].uuid == samples[begin].uuid) ++end;
    f(begin, end);
    begin = end;
  }
}

// What Controller::apply_report acts on of a batch whose samples were ingested into the series
// elsewhere (series_feed.h): per GPU, in order, its first sample, its newest, and each one whose
// double-bit ECC count differs from the sample before it; every XID event. The quarantine sees the
// same sequence of ECC counts less repeats, and the newest sample kept is the same, so the report
// has the same effect as with the whole batch; at 1 Hz that is one sample of three. Pure: safe on
// any thread.
model::TelemetryBatch digest_for_apply_report(model::TelemetryBatch batch);

}  // namespace gpurent::controller
