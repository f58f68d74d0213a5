// The controller's GPU series store behind a lock of its own, so that reports' telemetry can be
// ingested on a thread other than the controller's.
//
// At 10,000 nodes x 8 GPUs at 1 Hz the agents send 80,000 GPU samples (about a million series
// values) a second. Decoding them and feeding the Gorilla series on the controller's single thread
// left it no time for heartbeats (bench/RESULTS.md), so the server decodes and ingests each
// report's samples on its telemetry thread (server/telemetry_ingest.h) and the controller keeps
// only what it acts on (the newest sample per GPU, XID and ECC changes: Controller::apply_report).
// A simulation or a test leaves ingestion to the controller, on its own thread, through the same
// calls.
//
// Who owns what:
// - The lock guards the series store, the GPU -> node owner map and the counters. Every member is
//   safe to call from any thread; read() and write() run their function under the lock, so keep
//   them short (the ingesting thread waits meanwhile).
// - Owners are set by the controller (a GPU's node at registration and restore) and read by
//   ingest(): a GPU's samples reported by another node are refused and counted, as a stale or
//   foreign UUID must not feed another node's series. The first owner of a GPU stays (as
//   Controller::node_by_gpu_: a GPU claimed again is refused at registration).
// - Completed rollup rows stay here until they are taken for the database (take_rollups), in
//   slices, so that no single write carries the million rows a minute boundary completes at that
//   size: by the controller's tick into its ChangeSet, or in the server by a RollupPersister
//   (server/telemetry_ingest.h) on a thread and database connection of its own.
//
// Deterministic as the store is: the same samples in the same order give the same series.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/string_hash.h"
#include "model/telemetry.h"
#include "monitor/series_store.h"

namespace gpurent::controller {

// One GPU's samples from one report.
struct GpuSamples {
  std::string uuid;
  std::vector<monitor::MetricSample> samples;
};

class SeriesFeed {
 public:
  explicit SeriesFeed(monitor::StoreOptions options = {});

  // The GPU belongs to the node (the first call for a GPU wins).
  void set_owner(std::string_view gpu_uuid, std::string_view node_id);

  // Ingests a report's samples and XID events (each XID as the value of the kXidErrors series,
  // as DCGM reports the last code seen) into the series of the node's GPUs. Absent fields make no
  // sample: a gap, not a zero.
  void ingest(std::string_view node_id, const model::TelemetryBatch& batch);
  // The same for samples already in series form.
  void ingest(std::string_view node_id, std::span<const GpuSamples> gpus);

  // At most max_rows of the rollup rows completed so far, oldest first.
  std::vector<monitor::RollupRow> take_rollups(size_t max_rows);

  // Runs f(store) under the lock and returns what it returns.
  template <class F>
  decltype(auto) read(F&& f) const {
    std::lock_guard lock(mutex_);
    return f(static_cast<const monitor::SeriesStore&>(store_));
  }
  template <class F>
  decltype(auto) write(F&& f) {
    std::lock_guard lock(mutex_);
    return f(store_);
  }

  uint64_t accepted() const;
  uint64_t refused() const;  // out of order, too late, or of a GPU not the node's

 private:
  bool owned_by(std::string_view gpu_uuid, std::string_view node_id) const;  // lock held
  void ingest_locked(std::string_view gpu_uuid, std::string_view node_id,
                     std::span<const monitor::MetricSample> samples);

  mutable std::mutex mutex_;
  monitor::SeriesStore store_;
  std::unordered_map<std::string, std::string, StringHash, std::equal_to<>> owner_;
  std::vector<monitor::RollupRow> rollups_;  // taken from the store, not yet handed out
  size_t rollups_taken_ = 0;                 // of rollups_, already handed out
  uint64_t accepted_ = 0;
  uint64_t refused_ = 0;
  std::vector<monitor::MetricSample> scratch_;  // one GPU's samples in series form
};

}  // namespace gpurent::controller
