// The agent's telemetry pipeline: a TelemetrySource sampled every interval into a bounded backlog,
// from which every report takes the oldest batch.
//
// TelemetryBacklog keeps at most max_samples samples and max_xids XID events. When full, the
// oldest are dropped first and counted (dropped(), sent with every batch): a disconnected agent
// keeps the newest stretch and, once it reconnects, sends it oldest first, kMaxTelemetrySamples
// and kMaxTelemetryXids per report, one report per pass of its loop until the backlog is empty.
// next() only copies; taken() removes what the server accepted, even if add() dropped some of it
// in between (sequence numbers tell).
//
// NodeTelemetry samples when a tick is due. A late caller gets one sample for the ticks it
// missed, unless catch_up is set (the simulated fleet, which samples only when it reports): then
// each missed tick is sampled, with its own time, up to kMaxCatchUpTicks.
//
// Not thread-safe: one owner.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include "agent/telemetry/source.h"
#include "model/telemetry.h"

namespace gpurent::agent {

// A single agent's backlog: 20 minutes of an 8-GPU node at 1 Hz (about 3 MB).
inline constexpr size_t kTelemetryBacklogSamples = 10'000;
inline constexpr size_t kTelemetryBacklogXids = 1'000;
inline constexpr int kMaxCatchUpTicks = 60;

class TelemetryBacklog {
 public:
  TelemetryBacklog(size_t max_samples, size_t max_xids)
      : max_samples_(max_samples), max_xids_(max_xids) {}

  void add(model::TelemetryBatch batch);

  struct Pending {
    model::TelemetryBatch batch;
    uint64_t samples_end = 0;  // sequence number after the last sample in batch
    uint64_t xids_end = 0;
  };
  Pending next(size_t max_samples = model::kMaxTelemetrySamples,
               size_t max_xids = model::kMaxTelemetryXids) const;
  void taken(const Pending& sent);

  size_t samples() const { return samples_.size(); }
  size_t xids() const { return xids_.size(); }
  int64_t dropped() const { return dropped_; }

 private:
  const size_t max_samples_;
  const size_t max_xids_;
  std::deque<model::GpuSample> samples_;
  std::deque<model::XidEvent> xids_;
  uint64_t samples_begin_ = 0;  // sequence number of samples_.front()
  uint64_t xids_begin_ = 0;
  int64_t dropped_ = 0;
};

class NodeTelemetry {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  // interval > 0.
  NodeTelemetry(std::unique_ptr<TelemetrySource> source, std::chrono::milliseconds interval,
                size_t backlog_samples = kTelemetryBacklogSamples,
                size_t backlog_xids = kTelemetryBacklogXids, bool catch_up = false);

  SteadyTime next_due() const { return next_due_; }
  // Samples if a tick is due at `now` (wall_ms: the same instant on the wall clock).
  void tick(SteadyTime now, int64_t wall_ms, const BusyGpus& busy);

  TelemetryBacklog& backlog() { return backlog_; }
  TelemetrySource& source() { return *source_; }

 private:
  std::unique_ptr<TelemetrySource> source_;
  const std::chrono::milliseconds interval_;
  const bool catch_up_;
  TelemetryBacklog backlog_;
  SteadyTime next_due_{};  // the first tick is due at once
};

}  // namespace gpurent::agent
