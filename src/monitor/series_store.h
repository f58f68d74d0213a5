// The server's store of GPU telemetry: raw series, rollups, queries.
//
// One series per (GPU uuid, metric). Raw samples live in Gorilla-compressed chunks (gorilla.h),
// one per aligned `chunk_span` (2 h) window, kept for `raw_retention` (24 h). Every sample also
// feeds two rollups, min/max/sum/count per bucket: 1-minute buckets kept `minute_retention`
// (30 days) and 1-hour buckets kept `hour_retention` (a year), stored in memory as Gorilla chunks
// too. Non-finite values (NaN, +-inf) are kept raw but left out of rollups and query results.
//
// Inputs: samples (GPU uuid, node id, metric, time, value); rollup rows loaded from the store at
// start; the caller's current time, passed to compact() and query(). Outputs: query results;
// completed rollup rows for the caller to persist (take_completed_rollups); the latest value per
// series (for /metrics and alert evaluation); memory accounting.
//
// Ordering: per series, samples must come in strictly increasing time. A sample at or before the
// series' last one, or in a rollup bucket that has been closed, is refused and counted, never
// stored. A bucket closes when a sample of a later bucket arrives, or in compact() once `now` is
// past its end by `seal_after` (10 min: longer than an agent's reconnect backlog is expected to
// lag), so a late backlog still lands in its bucket while the series is quiet.
//
// Restart: raw samples are not persisted (24 h of them would cost more to write than they are
// worth); minute and hour rows are. load_rollups() restores them and rebuilds the hour that was
// open at shutdown from its persisted minutes. Samples of the minute open at shutdown are lost.
//
// Deterministic: no clock reads, no threads; time comes in as arguments. Thread-safety: none, one
// owner (the controller's strand); queries are const and may run concurrently with each other
// but not with a mutation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "monitor/gorilla.h"
#include "monitor/gpu_metrics.h"

namespace gpurent::monitor {

inline constexpr int64_t kMinuteMs = 60'000;
inline constexpr int64_t kHourMs = 3'600'000;
inline constexpr int64_t kDayMs = 24 * kHourMs;

enum class Resolution : uint8_t { kRaw, kMinute, kHour };
std::string_view to_string(Resolution resolution);
std::optional<Resolution> parse_resolution(std::string_view text);
// The bucket width: 0 for raw.
int64_t width_ms(Resolution resolution);

enum class Aggregation : uint8_t { kAvg, kMax, kMin, kSum };
std::string_view to_string(Aggregation aggregation);
std::optional<Aggregation> parse_aggregation(std::string_view text);

struct StoreOptions {
  int64_t chunk_span_ms = 2 * kHourMs;
  int64_t raw_retention_ms = kDayMs;
  int64_t minute_retention_ms = 30 * kDayMs;
  int64_t hour_retention_ms = 365 * kDayMs;
  int64_t seal_after_ms = 10 * kMinuteMs;
  // Rollup chunks are dropped whole, so these bound how long expired rows may linger.
  int64_t minute_chunk_span_ms = kDayMs;
  int64_t hour_chunk_span_ms = 30 * kDayMs;
};

struct MetricSample {
  Metric metric;
  int64_t t_ms = 0;
  double value = 0;
};

// One closed rollup bucket: what the caller persists and loads back. Primary key: (gpu_uuid,
// metric, resolution, bucket_start_ms). count is the number of finite raw samples (> 0).
struct RollupRow {
  std::string gpu_uuid;
  Metric metric = Metric::kGpuUtil;
  Resolution resolution = Resolution::kMinute;  // kMinute or kHour
  int64_t bucket_start_ms = 0;
  double min = 0;
  double max = 0;
  double sum = 0;
  int64_t count = 0;

  double avg() const { return sum / static_cast<double>(count); }
  bool operator==(const RollupRow&) const = default;
};

struct IngestResult {
  size_t accepted = 0;
  size_t out_of_order = 0;  // at or before the series' last sample, or a negative time
  size_t too_late = 0;      // in a rollup bucket already closed
};

struct LoadResult {
  size_t loaded = 0;
  size_t expired = 0;  // older than their resolution's retention at `now`
  size_t refused = 0;  // duplicates, out of order within a series, raw resolution, count <= 0
};

struct Query {
  Metric metric = Metric::kGpuUtil;
  std::vector<std::string> gpus;  // the series to aggregate; unknown GPUs contribute nothing
  int64_t from_ms = 0;            // inclusive
  int64_t to_ms = 0;              // exclusive
  int64_t step_ms = kMinuteMs;
  Aggregation aggregation = Aggregation::kAvg;
  std::optional<Resolution> resolution;  // chosen by the store when absent
};

struct QueryPoint {
  int64_t t_ms = 0;  // the bucket's start: a multiple of step_ms
  double value = 0;
  size_t series = 0;  // how many series had data in this bucket
  bool operator==(const QueryPoint&) const = default;
};

struct QueryResult {
  Resolution resolution = Resolution::kRaw;
  int64_t step_ms = 0;
  std::vector<QueryPoint> points;  // buckets with data only, in time order
};

inline constexpr int64_t kMaxQueryPoints = 11'000;  // Prometheus's limit per range query

// Approximate: the containers' own allocations, not the allocator's overhead.
struct MemoryStats {
  size_t gpus = 0;
  size_t series = 0;
  size_t raw_samples = 0;
  size_t raw_bytes = 0;  // raw chunks, slack included
  size_t rollup_rows = 0;
  size_t rollup_bytes = 0;
  size_t total_bytes = 0;  // the above plus the per-GPU and per-series bookkeeping
};

class SeriesStore {
 public:
  explicit SeriesStore(StoreOptions options = {});
  ~SeriesStore();
  SeriesStore(const SeriesStore&) = delete;
  SeriesStore& operator=(const SeriesStore&) = delete;

  // A batch of one GPU's samples (the agent reports per GPU). The GPU's node is remembered as the
  // latest one reported.
  IngestResult ingest(std::string_view gpu_uuid, std::string_view node_id,
                      std::span<const MetricSample> samples);
  // One sample, with the reason when it is refused.
  Status append(std::string_view gpu_uuid, std::string_view node_id, const MetricSample& sample);

  // Closes buckets that are quiet past seal_after, drops what is past retention, and forgets
  // series and GPUs with nothing left. Call it periodically (every minute is plenty).
  void compact(int64_t now_ms);

  // Rows closed since the last call, in the order they closed.
  std::vector<RollupRow> take_completed_rollups();
  // Restores persisted rows; call once at start, before ingesting. Rows may come in any order.
  LoadResult load_rollups(std::span<const RollupRow> rows, int64_t now_ms);

  // Errors (kInvalidArgument): "invalid_range" (from >= to), "invalid_step" (<= 0),
  // "too_many_points" (more than kMaxQueryPoints buckets).
  Result<QueryResult> query(const Query& query, int64_t now_ms) const;

  // One GPU's latest sample of each metric.
  struct GpuLatest {
    std::string uuid;
    std::array<Sample, kMetricCount> samples;  // by Metric; t_ms < 0 where the series has none

    GpuLatest();
    std::optional<Sample> of(Metric metric) const;
  };
  // The GPUs whose latest samples came from `node_id`, in the order they first came; empty when
  // none did. Valid until the store changes. One lookup for all of a node's GPUs (alert
  // evaluation asks it of every node every few seconds), where latest(uuid) takes one per GPU.
  std::span<const GpuLatest* const> latest_of_node(std::string_view node_id) const;

  // The GPU's latest samples; nullptr when the GPU is unknown. Valid until the store changes.
  const GpuLatest* latest(std::string_view gpu_uuid) const;
  std::optional<Sample> latest(std::string_view gpu_uuid, Metric metric) const;
  // Empty when the GPU is unknown.
  std::string_view node_of(std::string_view gpu_uuid) const;

  MemoryStats memory() const;

 private:
  struct Series;
  struct Gpu;
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  enum class Outcome { kAccepted, kOutOfOrder, kTooLate };

  Gpu& gpu(std::string_view gpu_uuid, std::string_view node_id);
  void index_by_node(const Gpu& gpu);
  void unindex_by_node(const Gpu& gpu);
  Outcome add(Gpu& gpu, Series& series, const MetricSample& sample);
  void close_minute(const std::string& gpu_uuid, Metric metric, Series& series);
  void close_hour(const std::string& gpu_uuid, Metric metric, Series& series);
  void merge_into_hour(const std::string& gpu_uuid, Metric metric, Series& series,
                       const RollupRow& minute);
  Resolution choose_resolution(const Query& query, int64_t now_ms) const;
  int64_t retention_ms(Resolution resolution) const;

  StoreOptions options_;
  std::unordered_map<std::string, std::unique_ptr<Gpu>, StringHash, std::equal_to<>> gpus_;
  // Node id -> the GPUs whose latest node it is (a GPU without a node is in none).
  std::unordered_map<std::string, std::vector<const GpuLatest*>, StringHash, std::equal_to<>>
      by_node_;
  std::vector<RollupRow> completed_;
};

}  // namespace gpurent::monitor
