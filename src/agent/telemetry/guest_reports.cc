#include "agent/telemetry/guest_reports.h"

#include <algorithm>
#include <span>

namespace gpurent::agent {

void WithGuestReports::sample(int64_t time_ms, const BusyGpus& busy, model::TelemetryBatch& out) {
  const size_t first = out.samples.size();
  host_->sample(time_ms, busy, out);
  std::vector<model::GpuSample> reported;
  guest_(time_ms, reported);
  // Only this tick's host samples: out may already hold earlier ticks' (a catch-up).
  const std::span<const model::GpuSample> host(out.samples.begin() + static_cast<ptrdiff_t>(first),
                                               out.samples.end());
  std::vector<model::GpuSample> added;
  for (auto& sample : reported) {
    if (std::ranges::find(host, sample.uuid, &model::GpuSample::uuid) == host.end()) {
      added.push_back(std::move(sample));
    }
  }
  for (auto& sample : added) out.samples.push_back(std::move(sample));
}

}  // namespace gpurent::agent
