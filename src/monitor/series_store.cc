#include "monitor/series_store.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

namespace gpurent::monitor {
namespace {

// Floor division to a multiple of `width` (> 0), correct for negative times too.
int64_t align_down(int64_t t, int64_t width) {
  const int64_t r = t % width;
  return r < 0 ? t - r - width : t - r;
}

// min/max/sum/count of one bucket. Inactive while start < 0.
struct Bucket {
  int64_t start = -1;
  double min = 0;
  double max = 0;
  double sum = 0;
  int64_t count = 0;

  bool active() const { return start >= 0; }
  void add(double value) {
    min = count == 0 ? value : std::min(min, value);
    max = count == 0 ? value : std::max(max, value);
    sum += value;
    ++count;
  }
  void merge(double other_min, double other_max, double other_sum, int64_t other_count) {
    if (other_count <= 0) return;
    min = count == 0 ? other_min : std::min(min, other_min);
    max = count == 0 ? other_max : std::max(max, other_max);
    sum += other_sum;
    count += other_count;
  }
  void merge(const Bucket& other) { merge(other.min, other.max, other.sum, other.count); }
};

// Rollup rows as four Gorilla chunks sharing their timestamps (the bucket starts): regular
// timestamps cost one bit each, and slowly moving min/max/sum compress as well as raw values.
struct RollupChunk {
  int64_t window_start = 0;
  Chunk min, max, sum, count;

  Status append(int64_t start, const Bucket& bucket) {
    // The first append checks the order for all four: they share timestamps.
    GPURENT_CHECK(min.append(start, bucket.min));
    (void)max.append(start, bucket.max);
    (void)sum.append(start, bucket.sum);
    (void)count.append(start, static_cast<double>(bucket.count));
    return {};
  }
  void seal() {
    min.seal();
    max.seal();
    sum.seal();
    count.seal();
  }
  // What the four chunks hold beyond themselves.
  size_t heap_bytes() const {
    return min.memory_bytes() + max.memory_bytes() + sum.memory_bytes() + count.memory_bytes() -
           4 * sizeof(Chunk);
  }
};

class RollupSeries {
 public:
  Status append(int64_t start, const Bucket& bucket, int64_t window_span) {
    const int64_t window = align_down(start, window_span);
    if (chunks_.empty() || chunks_.back().window_start != window) {
      if (!chunks_.empty() && chunks_.back().min.last_time() >= start) {
        return fail(Error::invalid("sample_out_of_order", "rollup row before the last one"));
      }
      if (!chunks_.empty()) chunks_.back().seal();
      chunks_.emplace_back().window_start = window;
    }
    return chunks_.back().append(start, bucket);
  }
  // Drops chunks whose last bucket ended at or before `cutoff`.
  void drop_ended_before(int64_t cutoff, int64_t width) {
    auto keep = std::find_if(chunks_.begin(), chunks_.end(), [&](const RollupChunk& chunk) {
      return chunk.min.last_time() + width > cutoff;
    });
    chunks_.erase(chunks_.begin(), keep);
  }
  // Calls fn(start, bucket) for the rows with start in [from, to), in order.
  template <class Fn>
  void for_each(int64_t from, int64_t to, Fn&& fn) const {
    for (const RollupChunk& chunk : chunks_) {
      if (chunk.min.last_time() < from || chunk.min.first_time() >= to) continue;
      Chunk::Iterator mins = chunk.min.begin(), maxs = chunk.max.begin(), sums = chunk.sum.begin(),
                      counts = chunk.count.begin();
      Sample lo, hi, total, n;
      while (mins.next(&lo) && maxs.next(&hi) && sums.next(&total) && counts.next(&n)) {
        if (lo.t_ms < from) continue;
        if (lo.t_ms >= to) break;
        Bucket bucket{lo.t_ms, lo.value, hi.value, total.value, static_cast<int64_t>(n.value)};
        fn(bucket);
      }
    }
  }
  std::optional<int64_t> last_start() const {
    if (chunks_.empty()) return std::nullopt;
    return chunks_.back().min.last_time();
  }
  bool empty() const { return chunks_.empty(); }
  size_t rows() const {
    size_t total = 0;
    for (const RollupChunk& chunk : chunks_) total += chunk.min.size();
    return total;
  }
  size_t memory_bytes() const {
    size_t total = chunks_.capacity() * sizeof(RollupChunk);
    for (const RollupChunk& chunk : chunks_) total += chunk.heap_bytes();
    return total;
  }

 private:
  std::vector<RollupChunk> chunks_;
};

}  // namespace

std::string_view to_string(Resolution resolution) {
  switch (resolution) {
    case Resolution::kRaw:
      return "raw";
    case Resolution::kMinute:
      return "1m";
    case Resolution::kHour:
      return "1h";
  }
  return "raw";
}

std::optional<Resolution> parse_resolution(std::string_view text) {
  for (Resolution r : {Resolution::kRaw, Resolution::kMinute, Resolution::kHour}) {
    if (text == to_string(r)) return r;
  }
  return std::nullopt;
}

int64_t width_ms(Resolution resolution) {
  switch (resolution) {
    case Resolution::kRaw:
      return 0;
    case Resolution::kMinute:
      return kMinuteMs;
    case Resolution::kHour:
      return kHourMs;
  }
  return 0;
}

std::string_view to_string(Aggregation aggregation) {
  switch (aggregation) {
    case Aggregation::kAvg:
      return "avg";
    case Aggregation::kMax:
      return "max";
    case Aggregation::kMin:
      return "min";
    case Aggregation::kSum:
      return "sum";
  }
  return "avg";
}

std::optional<Aggregation> parse_aggregation(std::string_view text) {
  for (Aggregation a :
       {Aggregation::kAvg, Aggregation::kMax, Aggregation::kMin, Aggregation::kSum}) {
    if (text == to_string(a)) return a;
  }
  return std::nullopt;
}

struct SeriesStore::Series {
  std::vector<Chunk> raw;  // in time order; the last one is open
  int64_t raw_window_start = 0;
  RollupSeries minute;
  RollupSeries hour;
  Bucket open_minute;
  Bucket open_hour;       // the closed minutes of the current hour
  int64_t watermark = 0;  // samples before this fall into closed buckets

  bool empty() const {
    return raw.empty() && minute.empty() && hour.empty() && !open_minute.active() &&
           !open_hour.active();
  }
};

// The latest samples sit apart from their series: alert evaluation reads a GPU's few watched
// metrics every few seconds, and a series' state spans cache lines of its own.
struct SeriesStore::Gpu {
  GpuLatest latest;  // its uuid is the GPU's
  std::string node;
  std::array<std::unique_ptr<Series>, kMetricCount> series;

  const std::string& uuid() const { return latest.uuid; }
  // Drops the metric's series and its latest sample.
  void drop(size_t metric) {
    series[metric].reset();
    latest.samples[metric] = Sample{-1, 0};
  }
};

SeriesStore::GpuLatest::GpuLatest() { samples.fill(Sample{-1, 0}); }

std::optional<Sample> SeriesStore::GpuLatest::of(Metric metric) const {
  const Sample& sample = samples[static_cast<size_t>(metric)];
  return sample.t_ms < 0 ? std::nullopt : std::optional<Sample>(sample);
}

SeriesStore::SeriesStore(StoreOptions options) : options_(options) {}
SeriesStore::~SeriesStore() = default;

SeriesStore::Gpu& SeriesStore::gpu(std::string_view gpu_uuid, std::string_view node_id) {
  auto it = gpus_.find(gpu_uuid);
  if (it == gpus_.end()) {
    auto gpu = std::make_unique<Gpu>();
    gpu->latest.uuid = gpu_uuid;
    it = gpus_.emplace(std::string(gpu_uuid), std::move(gpu)).first;
  }
  Gpu& g = *it->second;
  if (!node_id.empty() && g.node != node_id) {
    unindex_by_node(g);
    g.node = node_id;
    index_by_node(g);
  }
  return g;
}

void SeriesStore::index_by_node(const Gpu& gpu) {
  if (gpu.node.empty()) return;
  auto it = by_node_.find(gpu.node);
  if (it == by_node_.end()) it = by_node_.emplace(gpu.node, std::vector<const GpuLatest*>()).first;
  it->second.push_back(&gpu.latest);
}

void SeriesStore::unindex_by_node(const Gpu& gpu) {
  if (gpu.node.empty()) return;
  const auto it = by_node_.find(gpu.node);
  if (it == by_node_.end()) return;
  std::erase(it->second, &gpu.latest);
  if (it->second.empty()) by_node_.erase(it);
}

IngestResult SeriesStore::ingest(std::string_view gpu_uuid, std::string_view node_id,
                                 std::span<const MetricSample> samples) {
  Gpu& g = gpu(gpu_uuid, node_id);
  IngestResult result;
  for (const MetricSample& sample : samples) {
    auto& series = g.series[static_cast<size_t>(sample.metric)];
    if (!series) series = std::make_unique<Series>();
    switch (add(g, *series, sample)) {
      case Outcome::kAccepted:
        ++result.accepted;
        break;
      case Outcome::kOutOfOrder:
        ++result.out_of_order;
        break;
      case Outcome::kTooLate:
        ++result.too_late;
        break;
    }
  }
  return result;
}

Status SeriesStore::append(std::string_view gpu_uuid, std::string_view node_id,
                           const MetricSample& sample) {
  Gpu& g = gpu(gpu_uuid, node_id);
  auto& series = g.series[static_cast<size_t>(sample.metric)];
  if (!series) series = std::make_unique<Series>();
  switch (add(g, *series, sample)) {
    case Outcome::kAccepted:
      return {};
    case Outcome::kOutOfOrder:
      return fail(Error::invalid(
          "sample_out_of_order",
          fmt::format("{} sample of GPU {} at {} ms is not after the series' last one ({} ms)",
                      metric_info(sample.metric).name, gpu_uuid, sample.t_ms,
                      g.latest.samples[static_cast<size_t>(sample.metric)].t_ms)));
    case Outcome::kTooLate:
      return fail(Error::invalid(
          "sample_too_late",
          fmt::format("{} sample of GPU {} at {} ms falls in a closed rollup bucket (before {} ms)",
                      metric_info(sample.metric).name, gpu_uuid, sample.t_ms, series->watermark)));
  }
  return {};
}

SeriesStore::Outcome SeriesStore::add(Gpu& gpu, Series& series, const MetricSample& sample) {
  const std::string& gpu_uuid = gpu.uuid();
  Sample& latest = gpu.latest.samples[static_cast<size_t>(sample.metric)];
  const int64_t t = sample.t_ms;
  if (t < 0 || t <= latest.t_ms) return Outcome::kOutOfOrder;
  if (t < series.watermark) return Outcome::kTooLate;
  const int64_t window = align_down(t, options_.chunk_span_ms);
  if (series.raw.empty() || series.raw_window_start != window) {
    if (!series.raw.empty()) series.raw.back().seal();
    series.raw.emplace_back();
    series.raw_window_start = window;
  }
  if (!series.raw.back().append(t, sample.value)) return Outcome::kOutOfOrder;
  latest = {t, sample.value};
  if (!std::isfinite(sample.value)) return Outcome::kAccepted;

  const int64_t minute = align_down(t, kMinuteMs);
  if (series.open_minute.active() && series.open_minute.start != minute) {
    close_minute(gpu_uuid, sample.metric, series);
  }
  const int64_t hour = align_down(t, kHourMs);
  if (series.open_hour.active() && series.open_hour.start != hour) {
    close_hour(gpu_uuid, sample.metric, series);
  }
  if (!series.open_minute.active()) series.open_minute.start = minute;
  series.open_minute.add(sample.value);
  return Outcome::kAccepted;
}

void SeriesStore::close_minute(const std::string& gpu_uuid, Metric metric, Series& series) {
  const Bucket bucket = series.open_minute;
  series.open_minute = {};
  series.watermark = std::max(series.watermark, bucket.start + kMinuteMs);
  if (bucket.count == 0) return;
  // Cannot fail: buckets close in time order and the watermark keeps later samples after them.
  (void)series.minute.append(bucket.start, bucket, options_.minute_chunk_span_ms);
  RollupRow row{gpu_uuid,   metric,     Resolution::kMinute, bucket.start,
                bucket.min, bucket.max, bucket.sum,          bucket.count};
  merge_into_hour(gpu_uuid, metric, series, row);
  completed_.push_back(std::move(row));
}

void SeriesStore::merge_into_hour(const std::string& gpu_uuid, Metric metric, Series& series,
                                  const RollupRow& minute) {
  const int64_t hour = align_down(minute.bucket_start_ms, kHourMs);
  if (series.open_hour.active() && series.open_hour.start != hour) {
    close_hour(gpu_uuid, metric, series);
  }
  if (!series.open_hour.active()) series.open_hour.start = hour;
  series.open_hour.merge(minute.min, minute.max, minute.sum, minute.count);
}

void SeriesStore::close_hour(const std::string& gpu_uuid, Metric metric, Series& series) {
  const Bucket bucket = series.open_hour;
  series.open_hour = {};
  series.watermark = std::max(series.watermark, bucket.start + kHourMs);
  if (bucket.count == 0) return;
  (void)series.hour.append(bucket.start, bucket, options_.hour_chunk_span_ms);
  completed_.push_back({gpu_uuid, metric, Resolution::kHour, bucket.start, bucket.min, bucket.max,
                        bucket.sum, bucket.count});
}

void SeriesStore::compact(int64_t now_ms) {
  for (auto it = gpus_.begin(); it != gpus_.end();) {
    Gpu& g = *it->second;
    bool any = false;
    for (size_t m = 0; m < kMetricCount; ++m) {
      auto& series = g.series[m];
      if (!series) continue;
      const auto metric = static_cast<Metric>(m);
      if (series->open_minute.active() &&
          series->open_minute.start + kMinuteMs + options_.seal_after_ms <= now_ms) {
        close_minute(g.uuid(), metric, *series);
      }
      if (series->open_hour.active() &&
          series->open_hour.start + kHourMs + options_.seal_after_ms <= now_ms) {
        close_hour(g.uuid(), metric, *series);
      }
      auto& raw = series->raw;
      const int64_t raw_cutoff = now_ms - options_.raw_retention_ms;
      raw.erase(raw.begin(), std::find_if(raw.begin(), raw.end(), [&](const Chunk& chunk) {
                  return chunk.last_time() >= raw_cutoff;
                }));
      series->minute.drop_ended_before(now_ms - options_.minute_retention_ms, kMinuteMs);
      series->hour.drop_ended_before(now_ms - options_.hour_retention_ms, kHourMs);
      if (series->empty()) {
        g.drop(m);
      } else {
        any = true;
      }
    }
    if (any) {
      ++it;
    } else {
      unindex_by_node(g);
      it = gpus_.erase(it);
    }
  }
}

std::vector<RollupRow> SeriesStore::take_completed_rollups() {
  std::vector<RollupRow> rows;
  rows.swap(completed_);
  return rows;
}

int64_t SeriesStore::retention_ms(Resolution resolution) const {
  switch (resolution) {
    case Resolution::kRaw:
      return options_.raw_retention_ms;
    case Resolution::kMinute:
      return options_.minute_retention_ms;
    case Resolution::kHour:
      return options_.hour_retention_ms;
  }
  return 0;
}

LoadResult SeriesStore::load_rollups(std::span<const RollupRow> rows, int64_t now_ms) {
  // Per series, hours before minutes, each in time order: the minutes after the last persisted
  // hour then rebuild the hour that was open at shutdown.
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto key = [&](size_t i) {
    const RollupRow& row = rows[i];
    return std::tuple(std::string_view(row.gpu_uuid), row.metric,
                      row.resolution != Resolution::kHour, row.bucket_start_ms);
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });

  LoadResult result;
  for (size_t i : order) {
    const RollupRow& row = rows[i];
    if (row.resolution == Resolution::kRaw || row.count <= 0 || row.bucket_start_ms < 0) {
      ++result.refused;
      continue;
    }
    const int64_t width = width_ms(row.resolution);
    if (row.bucket_start_ms + width <= now_ms - retention_ms(row.resolution)) {
      ++result.expired;
      continue;
    }
    Gpu& g = gpu(row.gpu_uuid, {});
    auto& series = g.series[static_cast<size_t>(row.metric)];
    if (!series) series = std::make_unique<Series>();
    const Bucket bucket{row.bucket_start_ms, row.min, row.max, row.sum, row.count};
    const bool hour = row.resolution == Resolution::kHour;
    RollupSeries& target = hour ? series->hour : series->minute;
    if (!target.append(row.bucket_start_ms, bucket,
                       hour ? options_.hour_chunk_span_ms : options_.minute_chunk_span_ms)) {
      ++result.refused;
      continue;
    }
    ++result.loaded;
    series->watermark = std::max(series->watermark, row.bucket_start_ms + width);
    const std::optional<int64_t> last_hour = series->hour.last_start();
    if (!hour && (!last_hour || row.bucket_start_ms >= *last_hour + kHourMs)) {
      merge_into_hour(g.uuid(), row.metric, *series, row);
    }
  }
  return result;
}

Resolution SeriesStore::choose_resolution(const Query& query, int64_t now_ms) const {
  // The coarsest resolution no wider than the step whose retention reaches back to `from`;
  // when none does, the coarsest no wider than the step (it holds the most history).
  std::vector<Resolution> candidates;
  for (Resolution r : {Resolution::kHour, Resolution::kMinute, Resolution::kRaw}) {
    if (width_ms(r) <= query.step_ms) candidates.push_back(r);
  }
  for (Resolution r : candidates) {
    if (query.from_ms >= now_ms - retention_ms(r)) return r;
  }
  return candidates.front();
}

Result<QueryResult> SeriesStore::query(const Query& query, int64_t now_ms) const {
  if (query.from_ms < 0 || query.from_ms >= query.to_ms) {
    return fail(Error::invalid("invalid_range", fmt::format("need 0 <= from < to, got [{}, {})",
                                                            query.from_ms, query.to_ms)));
  }
  if (query.step_ms <= 0) {
    return fail(Error::invalid("invalid_step", "step must be positive"));
  }
  const int64_t first = align_down(query.from_ms, query.step_ms);
  const int64_t buckets = (query.to_ms - first - 1) / query.step_ms + 1;
  if (buckets > kMaxQueryPoints) {
    return fail(Error::invalid("too_many_points",
                               fmt::format("the range and step give {} points, more than {}; use a "
                                           "larger step or a shorter range",
                                           buckets, kMaxQueryPoints)));
  }
  QueryResult result;
  result.resolution = query.resolution.value_or(choose_resolution(query, now_ms));
  result.step_ms = query.step_ms;

  std::vector<Bucket> per_series(static_cast<size_t>(buckets));
  std::vector<double> combined(static_cast<size_t>(buckets), 0);
  std::vector<size_t> contributors(static_cast<size_t>(buckets), 0);
  // Rollup buckets and open buckets are attributed to the step bucket of their start.
  auto add_bucket = [&](const Bucket& bucket) {
    if (bucket.count <= 0 || bucket.start < first || bucket.start >= query.to_ms) return;
    per_series[static_cast<size_t>((bucket.start - first) / query.step_ms)].merge(bucket);
  };
  for (const std::string& uuid : query.gpus) {
    auto it = gpus_.find(uuid);
    if (it == gpus_.end()) continue;
    const Series* series = it->second->series[static_cast<size_t>(query.metric)].get();
    if (!series) continue;
    std::fill(per_series.begin(), per_series.end(), Bucket{});
    switch (result.resolution) {
      case Resolution::kRaw:
        for (const Chunk& chunk : series->raw) {
          if (chunk.last_time() < query.from_ms || chunk.first_time() >= query.to_ms) continue;
          Sample sample;
          for (Chunk::Iterator samples = chunk.begin(); samples.next(&sample);) {
            if (sample.t_ms < query.from_ms || !std::isfinite(sample.value)) continue;
            if (sample.t_ms >= query.to_ms) break;
            per_series[static_cast<size_t>((sample.t_ms - first) / query.step_ms)].add(
                sample.value);
          }
        }
        break;
      case Resolution::kMinute:
        series->minute.for_each(align_down(query.from_ms, kMinuteMs), query.to_ms, add_bucket);
        add_bucket(series->open_minute);
        break;
      case Resolution::kHour:
        series->hour.for_each(align_down(query.from_ms, kHourMs), query.to_ms, add_bucket);
        add_bucket(series->open_hour);
        // The open minute is not in the open hour yet; attribute it by its hour.
        if (series->open_minute.active()) {
          Bucket minute = series->open_minute;
          minute.start = align_down(minute.start, kHourMs);
          add_bucket(minute);
        }
        break;
    }
    for (size_t i = 0; i < per_series.size(); ++i) {
      const Bucket& bucket = per_series[i];
      if (bucket.count == 0) continue;
      double value = bucket.sum / static_cast<double>(bucket.count);
      if (query.aggregation == Aggregation::kMax) value = bucket.max;
      if (query.aggregation == Aggregation::kMin) value = bucket.min;
      if (contributors[i] == 0) {
        combined[i] = value;
      } else if (query.aggregation == Aggregation::kMax) {
        combined[i] = std::max(combined[i], value);
      } else if (query.aggregation == Aggregation::kMin) {
        combined[i] = std::min(combined[i], value);
      } else {
        combined[i] += value;
      }
      ++contributors[i];
    }
  }
  for (size_t i = 0; i < combined.size(); ++i) {
    if (contributors[i] == 0) continue;
    double value = combined[i];
    if (query.aggregation == Aggregation::kAvg) value /= static_cast<double>(contributors[i]);
    result.points.push_back(
        {first + static_cast<int64_t>(i) * query.step_ms, value, contributors[i]});
  }
  return result;
}

std::span<const SeriesStore::GpuLatest* const> SeriesStore::latest_of_node(
    std::string_view node_id) const {
  const auto it = by_node_.find(node_id);
  if (it == by_node_.end()) return {};
  return it->second;
}

std::optional<Sample> SeriesStore::latest(std::string_view gpu_uuid, Metric metric) const {
  const GpuLatest* found = latest(gpu_uuid);
  return found ? found->of(metric) : std::nullopt;
}

const SeriesStore::GpuLatest* SeriesStore::latest(std::string_view gpu_uuid) const {
  auto it = gpus_.find(gpu_uuid);
  return it == gpus_.end() ? nullptr : &it->second->latest;
}

std::string_view SeriesStore::node_of(std::string_view gpu_uuid) const {
  auto it = gpus_.find(gpu_uuid);
  return it == gpus_.end() ? std::string_view() : std::string_view(it->second->node);
}

MemoryStats SeriesStore::memory() const {
  MemoryStats stats;
  stats.gpus = gpus_.size();
  size_t bookkeeping = (gpus_.bucket_count() + by_node_.bucket_count()) * sizeof(void*);
  for (const auto& [node, gpus] : by_node_) {
    bookkeeping += node.capacity() + gpus.capacity() * sizeof(void*) + 2 * sizeof(void*);
  }
  for (const auto& [uuid, g] : gpus_) {
    bookkeeping += sizeof(Gpu) + uuid.capacity() + g->uuid().capacity() + g->node.capacity() +
                   2 * sizeof(void*);
    for (const auto& series : g->series) {
      if (!series) continue;
      ++stats.series;
      bookkeeping += sizeof(Series);
      stats.raw_bytes += (series->raw.capacity() - series->raw.size()) * sizeof(Chunk);
      for (const Chunk& chunk : series->raw) {
        stats.raw_samples += chunk.size();
        stats.raw_bytes += chunk.memory_bytes();
      }
      stats.rollup_rows += series->minute.rows() + series->hour.rows();
      stats.rollup_bytes += series->minute.memory_bytes() + series->hour.memory_bytes();
    }
  }
  stats.total_bytes = bookkeeping + stats.raw_bytes + stats.rollup_bytes;
  return stats;
}

}  // namespace gpurent::monitor
