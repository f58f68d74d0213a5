#include "agent/telemetry/telemetry.h"

#include <algorithm>

namespace gpurent::agent {
namespace {

// Drops the oldest entries beyond `max`, advancing the front's sequence number.
template <class T>
size_t trim(std::deque<T>& entries, size_t max, uint64_t& begin) {
  const size_t excess = entries.size() > max ? entries.size() - max : 0;
  entries.erase(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(excess));
  begin += excess;
  return excess;
}

// Removes the entries before sequence number `end`.
template <class T>
void drop_before(std::deque<T>& entries, uint64_t end, uint64_t& begin) {
  const size_t count = end > begin ? std::min<size_t>(end - begin, entries.size()) : 0;
  entries.erase(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(count));
  begin += count;
}

}  // namespace

void TelemetryBacklog::add(model::TelemetryBatch batch) {
  for (auto& sample : batch.samples) samples_.push_back(std::move(sample));
  for (auto& xid : batch.xids) xids_.push_back(std::move(xid));
  dropped_ += static_cast<int64_t>(trim(samples_, max_samples_, samples_begin_));
  dropped_ += static_cast<int64_t>(trim(xids_, max_xids_, xids_begin_));
}

TelemetryBacklog::Pending TelemetryBacklog::next(size_t max_samples, size_t max_xids) const {
  Pending pending;
  const size_t samples = std::min(max_samples, samples_.size());
  const size_t xids = std::min(max_xids, xids_.size());
  pending.batch.samples.assign(samples_.begin(),
                               samples_.begin() + static_cast<std::ptrdiff_t>(samples));
  pending.batch.xids.assign(xids_.begin(), xids_.begin() + static_cast<std::ptrdiff_t>(xids));
  pending.batch.dropped = dropped_;
  pending.samples_end = samples_begin_ + samples;
  pending.xids_end = xids_begin_ + xids;
  return pending;
}

void TelemetryBacklog::taken(const Pending& sent) {
  drop_before(samples_, sent.samples_end, samples_begin_);
  drop_before(xids_, sent.xids_end, xids_begin_);
}

NodeTelemetry::NodeTelemetry(std::unique_ptr<TelemetrySource> source,
                             std::chrono::milliseconds interval, size_t backlog_samples,
                             size_t backlog_xids, bool catch_up)
    : source_(std::move(source)),
      interval_(interval),
      catch_up_(catch_up),
      backlog_(backlog_samples, backlog_xids) {}

void NodeTelemetry::tick(SteadyTime now, int64_t wall_ms, const BusyGpus& busy) {
  if (now < next_due_) return;
  int64_t ticks = 1;
  if (catch_up_ && next_due_ != SteadyTime{}) {
    ticks = std::min<int64_t>(kMaxCatchUpTicks, (now - next_due_) / interval_ + 1);
  }
  // Stamped with the tick the sample belongs to, not the moment the caller got round to it: a
  // few ms of wake-up jitter would cost the series store 9 bits per timestamp instead of 1
  // (delta-of-delta encoding, docs/monitoring.md).
  const SteadyTime due =
      next_due_ == SteadyTime{} ? now : next_due_ + interval_ * ((now - next_due_) / interval_);
  const int64_t stamp =
      wall_ms - std::chrono::duration_cast<std::chrono::milliseconds>(now - due).count();
  model::TelemetryBatch batch;
  for (int64_t k = ticks - 1; k >= 0; --k) {
    source_->sample(stamp - k * interval_.count(), busy, batch);
  }
  backlog_.add(std::move(batch));
  // On the tick grid, so that sampling does not drift with the caller's lateness.
  next_due_ = next_due_ == SteadyTime{}
                  ? now + interval_
                  : next_due_ + interval_ * ((now - next_due_) / interval_ + 1);
}

}  // namespace gpurent::agent
