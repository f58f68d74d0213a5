#include "agent/telemetry/guest_reports.h"

#include <algorithm>
#include <iterator>
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
  std::erase_if(reported, [&](const model::GpuSample& sample) {
    return std::ranges::find(host, sample.uuid, &model::GpuSample::uuid) != host.end();
  });
  out.samples.insert(out.samples.end(), std::make_move_iterator(reported.begin()),
                     std::make_move_iterator(reported.end()));
}

}  // namespace gpurent::agent
