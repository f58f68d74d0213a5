#include "monitor/series_store.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace gpurent::monitor {
namespace {

// 2025-12-01T00:00:00Z: a whole day, so minutes and hours align with it.
constexpr int64_t kT0 = 1'764'547'200'000;

// Feeds `seconds` 1 Hz samples of gpu_util from `start`, value = f(second index).
template <class F>
void feed(SeriesStore& store, const std::string& gpu, int64_t start, int seconds, F f,
          Metric metric = Metric::kGpuUtil) {
  for (int i = 0; i < seconds; ++i) {
    const MetricSample sample{metric, start + i * 1000, f(i)};
    ASSERT_TRUE(store.append(gpu, "node-1", sample)) << i;
  }
}

Query util_query(std::vector<std::string> gpus, int64_t from, int64_t to, int64_t step,
                 Aggregation aggregation = Aggregation::kAvg) {
  Query query;
  query.metric = Metric::kGpuUtil;
  query.gpus = std::move(gpus);
  query.from_ms = from;
  query.to_ms = to;
  query.step_ms = step;
  query.aggregation = aggregation;
  return query;
}

TEST(GpuMetrics, TableIsInEnumOrderAndParsesBothNames) {
  for (size_t i = 0; i < kMetricCount; ++i) {
    EXPECT_EQ(static_cast<size_t>(metric_table()[i].metric), i);
    EXPECT_EQ(parse_metric(metric_table()[i].name), metric_table()[i].metric);
    EXPECT_EQ(parse_metric(metric_table()[i].dcgm_name), metric_table()[i].metric);
  }
  EXPECT_EQ(metric_info(Metric::kGpuTemp).dcgm_name, "DCGM_FI_DEV_GPU_TEMP");
  EXPECT_EQ(parse_metric("gpu_temperature"), std::nullopt);
}

TEST(SeriesStore, RawQueryAggregatesAcrossSeries) {
  SeriesStore store;
  feed(store, "GPU-a", kT0, 120, [](int i) { return i < 60 ? 10.0 : 30.0; });
  feed(store, "GPU-b", kT0, 120, [](int i) { return i < 60 ? 50.0 : 70.0; });
  const int64_t now = kT0 + 120'000;
  auto avg = store.query(util_query({"GPU-a", "GPU-b", "GPU-unknown"}, kT0, now, 30'000), now);
  ASSERT_TRUE(avg);
  EXPECT_EQ(avg->resolution, Resolution::kRaw);
  ASSERT_EQ(avg->points.size(), 4u);
  EXPECT_EQ(avg->points[0], (QueryPoint{kT0, 30.0, 2}));
  EXPECT_EQ(avg->points[3], (QueryPoint{kT0 + 90'000, 50.0, 2}));
  auto sum = store.query(util_query({"GPU-a", "GPU-b"}, kT0, now, 60'000, Aggregation::kSum), now);
  ASSERT_TRUE(sum);
  EXPECT_EQ(sum->resolution, Resolution::kMinute);
  ASSERT_EQ(sum->points.size(), 2u);
  EXPECT_DOUBLE_EQ(sum->points[0].value, 60.0);
  EXPECT_DOUBLE_EQ(sum->points[1].value, 100.0);
  auto max = store.query(util_query({"GPU-a", "GPU-b"}, kT0, now, 120'000, Aggregation::kMax), now);
  ASSERT_TRUE(max);
  ASSERT_EQ(max->points.size(), 1u);
  EXPECT_EQ(max->points[0].value, 70.0);
  auto min = store.query(
      util_query({"GPU-a", "GPU-b"}, kT0 + 30'000, now, 120'000, Aggregation::kMin), now);
  ASSERT_TRUE(min);
  ASSERT_EQ(min->points.size(), 1u);
  EXPECT_EQ(min->points[0], (QueryPoint{kT0, 10.0, 2}));
}

TEST(SeriesStore, RefusesOutOfOrderAndDuplicateSamples) {
  SeriesStore store;
  ASSERT_TRUE(store.append("GPU-a", "n", {Metric::kGpuTemp, kT0 + 5000, 40}));
  EXPECT_EQ(store.append("GPU-a", "n", {Metric::kGpuTemp, kT0 + 5000, 41}).error().code,
            "sample_out_of_order");
  const MetricSample batch[] = {{Metric::kGpuTemp, kT0 + 4000, 1},
                                {Metric::kGpuTemp, kT0 + 6000, 2},
                                {Metric::kGpuUtil, kT0 + 1000, 3},
                                {Metric::kGpuTemp, -1, 4}};
  const IngestResult result = store.ingest("GPU-a", "n", batch);
  EXPECT_EQ(result.accepted, 2u);
  EXPECT_EQ(result.out_of_order, 2u);
  EXPECT_EQ(store.latest("GPU-a", Metric::kGpuTemp)->value, 2);
  EXPECT_EQ(store.latest("GPU-a", Metric::kGpuUtil)->t_ms, kT0 + 1000);
  EXPECT_EQ(store.latest("GPU-a", Metric::kPowerUsage), std::nullopt);
  EXPECT_EQ(store.node_of("GPU-a"), "n");
  EXPECT_EQ(store.node_of("GPU-z"), "");
}

TEST(SeriesStore, RollupsCloseInOrderWithMinMaxSumCount) {
  SeriesStore store;
  // 61 minutes and one sample: minutes 0..60 close as each next one starts, hour 0 when hour 1
  // starts.
  feed(store, "GPU-a", kT0, 3661, [](int i) { return static_cast<double>(i % 60); });
  const std::vector<RollupRow> rows = store.take_completed_rollups();
  ASSERT_EQ(rows.size(), 61u + 1u);
  EXPECT_EQ(rows[0], (RollupRow{"GPU-a", Metric::kGpuUtil, Resolution::kMinute, kT0, 0, 59,
                                59 * 60 / 2, 60}));
  // The hour closes when the first sample of the next hour arrives, after minute 59.
  EXPECT_EQ(rows[60], (RollupRow{"GPU-a", Metric::kGpuUtil, Resolution::kHour, kT0, 0, 59,
                                 60.0 * 59 * 60 / 2, 3600}));
  EXPECT_EQ(rows[61].resolution, Resolution::kMinute);
  EXPECT_EQ(rows[61].bucket_start_ms, kT0 + kHourMs);
  EXPECT_TRUE(store.take_completed_rollups().empty());
}

TEST(SeriesStore, CompactSealsQuietBucketsAndLateSamplesAreRefused) {
  SeriesStore store;
  feed(store, "GPU-a", kT0, 30, [](int) { return 5.0; });
  store.compact(kT0 + kMinuteMs + 9 * kMinuteMs);  // not yet past seal_after
  EXPECT_TRUE(store.take_completed_rollups().empty());
  // A reconnecting agent's backlog still lands in its minute.
  ASSERT_TRUE(store.append("GPU-a", "node-1", {Metric::kGpuUtil, kT0 + 40'000, 7}));
  store.compact(kT0 + kMinuteMs + 10 * kMinuteMs);
  auto rows = store.take_completed_rollups();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].count, 31);
  EXPECT_EQ(rows[0].max, 7);
  EXPECT_EQ(store.append("GPU-a", "node-1", {Metric::kGpuUtil, kT0 + 50'000, 1}).error().code,
            "sample_too_late");
  // The hour closes an hour and seal_after after its start; its minutes then cannot reopen it.
  store.compact(kT0 + kHourMs + 10 * kMinuteMs);
  rows = store.take_completed_rollups();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].resolution, Resolution::kHour);
  EXPECT_EQ(rows[0].count, 31);
  EXPECT_EQ(
      store.append("GPU-a", "node-1", {Metric::kGpuUtil, kT0 + 30 * kMinuteMs, 1}).error().code,
      "sample_too_late");
  EXPECT_TRUE(store.append("GPU-a", "node-1", {Metric::kGpuUtil, kT0 + kHourMs, 1}));
}

TEST(SeriesStore, NonFiniteValuesAreStoredRawButLeftOutOfRollups) {
  SeriesStore store;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  feed(store, "GPU-a", kT0, 4, [&](int i) { return i == 1 ? nan : i == 2 ? INFINITY : 1.0; });
  auto raw = store.query(util_query({"GPU-a"}, kT0, kT0 + 4000, 1000), kT0 + 4000);
  ASSERT_TRUE(raw);
  ASSERT_EQ(raw->points.size(), 2u);
  EXPECT_EQ(raw->points[1], (QueryPoint{kT0 + 3000, 1.0, 1}));
  ASSERT_TRUE(store.append("GPU-a", "n", {Metric::kGpuUtil, kT0 + 61'000, 2}));
  const auto rows = store.take_completed_rollups();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].count, 2);
  EXPECT_EQ(rows[0].sum, 2);
  EXPECT_EQ(store.memory().raw_samples, 5u);
}

TEST(SeriesStore, RetentionDropsRawThenRollupsThenTheSeries) {
  SeriesStore store;
  feed(store, "GPU-a", kT0, 7200, [](int i) { return static_cast<double>(i % 100); });
  const int64_t end = kT0 + 7200 * 1000;
  store.compact(end + kDayMs - 1000);  // the last sample is still within 24 h
  EXPECT_EQ(store.memory().raw_samples, 7200u);
  store.compact(end + kDayMs);
  EXPECT_EQ(store.memory().raw_samples, 0u);
  // Raw is gone: a recent query falls back to what the rollups hold.
  auto minutes = store.query(util_query({"GPU-a"}, kT0, end, kMinuteMs), end + kDayMs);
  ASSERT_TRUE(minutes);
  EXPECT_EQ(minutes->resolution, Resolution::kMinute);
  EXPECT_EQ(minutes->points.size(), 120u);
  const MemoryStats stats = store.memory();
  EXPECT_EQ(stats.rollup_rows, 120u + 2u);
  store.compact(end + 31 * kDayMs);
  EXPECT_EQ(store.memory().rollup_rows, 2u);
  auto hours = store.query(util_query({"GPU-a"}, kT0, end, kMinuteMs), end + 31 * kDayMs);
  EXPECT_TRUE(hours->points.empty());  // minutes chosen (step 1 min), and they are gone
  auto hourly = store.query(util_query({"GPU-a"}, kT0, end, kHourMs), end + 31 * kDayMs);
  ASSERT_EQ(hourly->points.size(), 2u);
  EXPECT_EQ(hourly->resolution, Resolution::kHour);
  EXPECT_DOUBLE_EQ(hourly->points[0].value, 49.5);
  EXPECT_EQ(store.latest_of_node("node-1").size(), 1u);
  store.compact(end + 366 * kDayMs);
  EXPECT_EQ(store.memory().gpus, 0u);
  EXPECT_EQ(store.memory().series, 0u);
  EXPECT_EQ(store.latest("GPU-a"), nullptr);
  EXPECT_TRUE(store.latest_of_node("node-1").empty());
}

TEST(SeriesStore, LatestSamplesByNodeFollowEachGpusLatestNode) {
  SeriesStore store;
  ASSERT_TRUE(store.append("GPU-a", "n-1", {Metric::kGpuTemp, kT0, 40}));
  ASSERT_TRUE(store.append("GPU-b", "n-1", {Metric::kGpuUtil, kT0, 7}));
  ASSERT_TRUE(store.append("GPU-c", "n-2", {Metric::kGpuUtil, kT0, 9}));
  auto n1 = store.latest_of_node("n-1");
  ASSERT_EQ(n1.size(), 2u);  // in the order they first came
  EXPECT_EQ(n1[0]->uuid, "GPU-a");
  EXPECT_EQ(n1[0]->of(Metric::kGpuTemp)->value, 40);
  EXPECT_FALSE(n1[0]->of(Metric::kGpuUtil));
  EXPECT_EQ(n1[1]->uuid, "GPU-b");
  EXPECT_EQ(n1[1]->of(Metric::kGpuUtil)->t_ms, kT0);
  // A GPU that n-2 reports now is n-2's; a later sample updates the same entry.
  ASSERT_TRUE(store.append("GPU-a", "n-2", {Metric::kGpuTemp, kT0 + 1000, 41}));
  n1 = store.latest_of_node("n-1");
  ASSERT_EQ(n1.size(), 1u);
  EXPECT_EQ(n1[0]->uuid, "GPU-b");
  const auto n2 = store.latest_of_node("n-2");
  ASSERT_EQ(n2.size(), 2u);
  EXPECT_EQ(n2[1], store.latest("GPU-a"));
  EXPECT_EQ(n2[1]->of(Metric::kGpuTemp)->value, 41);
  EXPECT_TRUE(store.latest_of_node("n-3").empty());
  // A series that retention drops (its hour rollups after a year) takes its latest sample with
  // it; the GPU stays while another series has data.
  const int64_t later = kT0 + 366 * kDayMs;
  ASSERT_TRUE(store.append("GPU-c", "n-2", {Metric::kGpuTemp, later, 50}));
  store.compact(later + 1000);
  EXPECT_FALSE(store.latest("GPU-c", Metric::kGpuUtil));
  EXPECT_EQ(store.latest("GPU-c", Metric::kGpuTemp)->value, 50);
  EXPECT_EQ(store.latest_of_node("n-2").size(), 1u);  // GPU-a is gone whole
  EXPECT_TRUE(store.latest_of_node("n-1").empty());
}

TEST(SeriesStore, ResolutionsAgreeOnAlignedSteps) {
  SeriesStore store;
  feed(store, "GPU-a", kT0, 3 * 3600, [](int i) { return static_cast<double>((i * 7919) % 101); });
  feed(store, "GPU-b", kT0, 3 * 3600, [](int i) { return static_cast<double>((i * 104729) % 97); });
  const int64_t now = kT0 + 3 * kHourMs;
  for (Aggregation aggregation :
       {Aggregation::kAvg, Aggregation::kMax, Aggregation::kMin, Aggregation::kSum}) {
    for (int64_t step : {kMinuteMs * 5, kHourMs}) {
      std::vector<QueryResult> results;
      for (Resolution resolution : {Resolution::kRaw, Resolution::kMinute, Resolution::kHour}) {
        if (width_ms(resolution) > step) continue;
        Query query = util_query({"GPU-a", "GPU-b"}, kT0, now, step, aggregation);
        query.resolution = resolution;
        auto result = store.query(query, now);
        ASSERT_TRUE(result);
        results.push_back(*result);
      }
      for (const QueryResult& result : results) {
        ASSERT_EQ(result.points.size(), results[0].points.size());
        for (size_t i = 0; i < result.points.size(); ++i) {
          EXPECT_EQ(result.points[i].t_ms, results[0].points[i].t_ms);
          EXPECT_NEAR(result.points[i].value, results[0].points[i].value, 1e-9)
              << to_string(aggregation) << " step " << step << " at " << i;
        }
      }
    }
  }
}

TEST(SeriesStore, ChoosesTheCoarsestResolutionThatCoversTheRange) {
  SeriesStore store;
  const int64_t now = kT0 + 400 * kDayMs;
  auto chosen = [&](int64_t from, int64_t step) {
    return store.query(util_query({"GPU-a"}, from, now, step), now)->resolution;
  };
  EXPECT_EQ(chosen(now - kHourMs, 15'000), Resolution::kRaw);
  EXPECT_EQ(chosen(now - kHourMs, kMinuteMs), Resolution::kMinute);
  EXPECT_EQ(chosen(now - 3 * kDayMs, 90'000), Resolution::kMinute);
  EXPECT_EQ(chosen(now - 3 * kDayMs, kHourMs), Resolution::kHour);
  EXPECT_EQ(chosen(now - 2 * kDayMs, 30'000), Resolution::kRaw);  // nothing coarser fits the step
  EXPECT_EQ(chosen(now - 60 * kDayMs, 10 * kMinuteMs), Resolution::kMinute);
}

TEST(SeriesStore, QueryValidation) {
  SeriesStore store;
  EXPECT_EQ(store.query(util_query({}, kT0, kT0, 1000), kT0).error().code, "invalid_range");
  EXPECT_EQ(store.query(util_query({}, -5, kT0, 1000), kT0).error().code, "invalid_range");
  EXPECT_EQ(store.query(util_query({}, kT0, kT0 + 1, 0), kT0).error().code, "invalid_step");
  EXPECT_EQ(store.query(util_query({}, kT0, kT0 + kDayMs, 1000), kT0).error().code,
            "too_many_points");
  EXPECT_TRUE(store.query(util_query({}, kT0, kT0 + 11'000 * 1000, 1000), kT0));
}

TEST(SeriesStore, PersistedRollupsReloadAndRebuildTheOpenHour) {
  SeriesStore before;
  // 1 h 30 min of data, then quiet: hour 0 and every minute closed, hour 1 open.
  feed(before, "GPU-a", kT0, 5400, [](int i) { return static_cast<double>(i % 37); });
  feed(
      before, "GPU-a", kT0, 5400, [](int i) { return 300.0 + i % 5; }, Metric::kPowerUsage);
  const int64_t now = kT0 + 100 * kMinuteMs;
  before.compact(now);
  std::vector<RollupRow> persisted = before.take_completed_rollups();
  ASSERT_EQ(persisted.size(), 2u * (90 + 1));
  std::reverse(persisted.begin(), persisted.end());  // any order
  persisted.push_back(persisted.front());            // a duplicate
  persisted.push_back(
      {"GPU-a", Metric::kGpuUtil, Resolution::kMinute, kT0 - 40 * kDayMs, 1, 1, 1, 1});  // expired
  persisted.push_back({"GPU-a", Metric::kGpuUtil, Resolution::kRaw, kT0, 1, 1, 1, 1});

  SeriesStore after;
  const LoadResult loaded = after.load_rollups(persisted, now);
  EXPECT_EQ(loaded.loaded, 2u * 91);
  EXPECT_EQ(loaded.expired, 1u);
  EXPECT_EQ(loaded.refused, 2u);
  EXPECT_TRUE(after.take_completed_rollups().empty());

  // Minute and hour queries agree, the open hour included.
  for (int64_t step : {kMinuteMs, kHourMs}) {
    Query query = util_query({"GPU-a"}, kT0, now, step);
    auto want = before.query(query, now);
    auto got = after.query(query, now);
    ASSERT_TRUE(want && got);
    ASSERT_EQ(got->points.size(), want->points.size());
    for (size_t i = 0; i < got->points.size(); ++i) {
      EXPECT_EQ(got->points[i].t_ms, want->points[i].t_ms);
      EXPECT_NEAR(got->points[i].value, want->points[i].value, 1e-9);
    }
  }
  // Samples continue after the persisted minutes; hour 1 then closes with every persisted minute.
  EXPECT_EQ(after.append("GPU-a", "n", {Metric::kGpuUtil, kT0 + 89 * kMinuteMs, 1}).error().code,
            "sample_too_late");
  feed(after, "GPU-a", kT0 + 90 * kMinuteMs, 1801, [](int) { return 1.0; });
  const auto rows = after.take_completed_rollups();
  const auto hour = std::find_if(rows.begin(), rows.end(), [](const RollupRow& row) {
    return row.resolution == Resolution::kHour;
  });
  ASSERT_NE(hour, rows.end());
  EXPECT_EQ(hour->bucket_start_ms, kT0 + kHourMs);
  EXPECT_EQ(hour->count, 30 * 60 + 30 * 60);  // 30 reloaded minutes and 30 new ones
}

TEST(SeriesStore, MemoryAccounting) {
  SeriesStore store;
  const MetricSample first[] = {{Metric::kGpuUtil, kT0, 1}, {Metric::kGpuTemp, kT0, 40}};
  store.ingest("GPU-a", "n", first);
  feed(store, "GPU-b", kT0, 600, [](int i) { return static_cast<double>(i % 3); });
  const MemoryStats stats = store.memory();
  EXPECT_EQ(stats.gpus, 2u);
  EXPECT_EQ(stats.series, 3u);
  EXPECT_EQ(stats.raw_samples, 602u);
  EXPECT_EQ(stats.rollup_rows, 9u);
  EXPECT_GT(stats.raw_bytes, 3 * sizeof(Chunk));
  EXPECT_GT(stats.rollup_bytes, 0u);
  EXPECT_GT(stats.total_bytes, stats.raw_bytes + stats.rollup_bytes);
}

}  // namespace
}  // namespace gpurent::monitor
