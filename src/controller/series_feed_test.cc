// The series feed (series_feed.h): ownership, rollups in slices, ingestion on one thread while
// another queries; and the digest of a batch that apply_report takes when the host fed the series
// (gpu_telemetry.h).
#include "controller/series_feed.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "controller/gpu_telemetry.h"

namespace gpurent::controller {
namespace {

using monitor::Metric;
using monitor::SeriesStore;

// 2025-12-01T00:00:00Z.
constexpr int64_t kT0 = 1'764'547'200'000;

model::GpuSample sample(const std::string& uuid, int64_t t_ms, int64_t util) {
  model::GpuSample s{.uuid = uuid, .time_ms = t_ms};
  s.gpu_util_pct = util;
  s.temperature_c = 40 + util / 10;
  return s;
}

// One report of a node with `gpus` GPUs: `ticks` samples each, from second `first`.
model::TelemetryBatch report(int gpus, int first, int ticks) {
  model::TelemetryBatch batch;
  for (int g = 0; g < gpus; ++g) {
    for (int i = first; i < first + ticks; ++i) {
      batch.samples.push_back(sample("GPU-" + std::to_string(g), kT0 + i * 1000LL, i % 100));
    }
  }
  return batch;
}

TEST(SeriesFeed, IngestsTheNodesGpusOnlyAndCountsTheRest) {
  SeriesFeed feed;
  feed.set_owner("GPU-0", "n-1");
  feed.set_owner("GPU-1", "n-2");
  feed.set_owner("GPU-0", "n-2");  // the first owner stays
  auto batch = report(2, 0, 3);
  batch.xids.push_back({"GPU-0", kT0 + 2500, 79});
  feed.ingest("n-1", batch);
  // GPU-0: 3 samples x 2 fields + the XID; GPU-1 is n-2's: its 6 values are refused.
  EXPECT_EQ(feed.accepted(), 7u);
  EXPECT_EQ(feed.refused(), 6u);
  feed.read([](const SeriesStore& series) {
    EXPECT_EQ(series.latest("GPU-0", Metric::kGpuUtil)->value, 2);
    EXPECT_EQ(series.latest("GPU-0", Metric::kXidErrors)->value, 79);
    EXPECT_FALSE(series.latest("GPU-1", Metric::kGpuUtil));
    const SeriesStore::GpuLatest* latest = series.latest("GPU-0");
    ASSERT_NE(latest, nullptr);
    EXPECT_EQ(latest->of(Metric::kGpuTemp)->value, 40);
    EXPECT_FALSE(latest->of(Metric::kPowerUsage));
    EXPECT_EQ(series.latest("GPU-1"), nullptr);
    // The node's GPUs in one lookup: only GPU-0 fed n-1's series.
    const auto of_node = series.latest_of_node("n-1");
    ASSERT_EQ(of_node.size(), 1u);
    EXPECT_EQ(of_node[0], latest);
    EXPECT_TRUE(series.latest_of_node("n-2").empty());
  });
  // Again: out of order now.
  feed.ingest("n-1", report(1, 0, 3));
  EXPECT_EQ(feed.accepted(), 7u);
  EXPECT_EQ(feed.refused(), 12u);
}

TEST(SeriesFeed, HandsOutRollupRowsInSlicesOldestFirst) {
  SeriesFeed feed;
  for (int g = 0; g < 3; ++g) feed.set_owner("GPU-" + std::to_string(g), "n-1");
  feed.ingest("n-1", report(3, 0, 61));  // second 60 closes minute 0 of 3 GPUs x 2 metrics
  const auto first = feed.take_rollups(4);
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(first[0].gpu_uuid, "GPU-0");
  EXPECT_EQ(first[0].count, 60);
  feed.ingest("n-1", report(3, 61, 60));  // closes minute 1: 6 more rows
  const auto rest = feed.take_rollups(100);
  ASSERT_EQ(rest.size(), 8u);
  EXPECT_EQ(rest[0].bucket_start_ms, kT0);
  EXPECT_EQ(rest[2].bucket_start_ms, kT0 + monitor::kMinuteMs);
  EXPECT_TRUE(feed.take_rollups(100).empty());
}

// What the server does: its telemetry thread ingests while the controller's thread evaluates and
// queries (run it under TSan to check the locking: cmake -DCMAKE_CXX_FLAGS=-fsanitize=thread).
TEST(SeriesFeed, IngestsOnOneThreadWhileAnotherReads) {
  SeriesFeed feed;
  constexpr int kGpus = 8;
  constexpr int kReports = 400;  // 3 ticks each: 20 minutes of samples
  for (int g = 0; g < kGpus; ++g) feed.set_owner("GPU-" + std::to_string(g), "n-1");
  std::atomic<bool> done = false;
  std::thread ingester([&] {
    for (int r = 0; r < kReports; ++r) feed.ingest("n-1", report(kGpus, r * 3, 3));
    done = true;
  });
  size_t rows = 0;
  int reads = 0;
  do {
    feed.read([&](const SeriesStore& series) {
      if (const auto latest = series.latest("GPU-7", Metric::kGpuUtil)) {
        EXPECT_GE(latest->t_ms, kT0);
      }
      const auto result = series.query({.metric = Metric::kGpuUtil,
                                        .gpus = {"GPU-0", "GPU-3"},
                                        .from_ms = kT0,
                                        .to_ms = kT0 + monitor::kHourMs,
                                        .step_ms = monitor::kMinuteMs},
                                       kT0 + monitor::kHourMs);
      EXPECT_TRUE(result);
      (void)series.memory();
    });
    rows += feed.take_rollups(7).size();
    ++reads;
  } while (!done);
  ingester.join();
  rows += feed.take_rollups(100'000).size();
  EXPECT_GT(reads, 0);
  EXPECT_EQ(feed.accepted(), static_cast<uint64_t>(kGpus) * kReports * 3 * 2);
  EXPECT_EQ(feed.refused(), 0u);
  // 1,200 s of samples close minutes 0-18 (the 20th is still open): 19 x 8 GPUs x 2 metrics.
  EXPECT_EQ(rows, 19u * kGpus * 2);
}

TEST(DigestForApplyReport, KeepsFirstNewestAndEccChangesPerGpu) {
  model::TelemetryBatch batch;
  for (int i = 0; i < 4; ++i) batch.samples.push_back(sample("GPU-a", kT0 + i * 1000LL, i));
  for (int i = 0; i < 5; ++i) {
    auto s = sample("GPU-b", kT0 + i * 1000LL, 50 + i);
    s.ecc_dbe_total = i < 2 ? 0 : 1;  // rises at the third sample
    batch.samples.push_back(s);
  }
  batch.samples.push_back(sample("GPU-c", kT0, 7));
  batch.xids.push_back({"GPU-a", kT0 + 500, 48});
  batch.dropped = 3;
  const auto digest = digest_for_apply_report(batch);
  std::vector<std::pair<std::string, int64_t>> kept;
  for (const auto& s : digest.samples) kept.emplace_back(s.uuid, *s.gpu_util_pct);
  const std::vector<std::pair<std::string, int64_t>> expected = {
      {"GPU-a", 0}, {"GPU-a", 3}, {"GPU-b", 50}, {"GPU-b", 52}, {"GPU-b", 54}, {"GPU-c", 7}};
  EXPECT_EQ(kept, expected);
  EXPECT_EQ(digest.xids, batch.xids);
  EXPECT_EQ(digest.dropped, 3);
}

}  // namespace
}  // namespace gpurent::controller
