// The telemetry thread (telemetry_ingest.h): a report is read, and its frame decoded and ingested,
// off the calling thread, which resumes with the report and the digest; bad bodies and frames are
// the report's 400s; the rollup persister writes every completed row, the last ones at its
// destruction.
#include "server/telemetry_ingest.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <thread>

#include "model/codec.h"

namespace gpurent::server {
namespace {

namespace asio = boost::asio;

// 2025-12-01T00:00:00Z.
constexpr int64_t kT0 = 1'764'547'200'000;

model::TelemetryBatch three_ticks(const std::string& uuid, int first) {
  model::TelemetryBatch batch;
  for (int i = first; i < first + 3; ++i) {
    model::GpuSample s{.uuid = uuid, .time_ms = kT0 + i * 1000LL};
    s.gpu_util_pct = i;
    batch.samples.push_back(s);
  }
  return batch;
}

// The body of a report that carries `batch` (node_report_json writes its frame).
std::string report_body(const model::TelemetryBatch& batch) {
  model::NodeReport report{.applied_generation = 7};
  report.workloads.push_back({"i-1", 1, model::WorkloadPhase::kRunning, std::nullopt, ""});
  report.telemetry = batch;
  return model::node_report_json(report);
}

class TelemetryIngestTest : public ::testing::Test {
 protected:
  // Runs take() as the report handler does, on this (the "I/O") thread.
  Result<model::NodeReport> take(TelemetryIngest& ingest, std::string body) {
    Result<model::NodeReport> answer = fail(Error::internal("not answered"));
    const auto io_thread = std::this_thread::get_id();
    asio::co_spawn(
        io_,
        [&]() -> asio::awaitable<void> {
          answer = co_await ingest.take("n-1", std::move(body));
          resumed_on_io_thread_ = std::this_thread::get_id() == io_thread;
        },
        asio::detached);
    io_.restart();
    io_.run();
    return answer;
  }

  asio::io_context io_;
  bool resumed_on_io_thread_ = false;
};

TEST_F(TelemetryIngestTest, ReadsIngestsAndAnswersTheReportOnTheCallersThread) {
  controller::SeriesFeed feed;
  feed.set_owner("GPU-a", "n-1");
  TelemetryIngest ingest(&feed);
  const auto report = take(ingest, report_body(three_ticks("GPU-a", 0)));
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(resumed_on_io_thread_);
  EXPECT_EQ(report->applied_generation, 7);
  ASSERT_EQ(report->workloads.size(), 1u);
  EXPECT_EQ(report->workloads[0].instance_id, "i-1");
  const auto& digest = report->telemetry;
  ASSERT_EQ(digest.samples.size(), 2u);  // the first and the newest
  EXPECT_EQ(digest.samples[0].gpu_util_pct, 0);
  EXPECT_EQ(digest.samples[1].gpu_util_pct, 2);
  EXPECT_EQ(feed.accepted(), 3u);
  feed.read([](const monitor::SeriesStore& series) {
    EXPECT_EQ(series.latest("GPU-a", monitor::Metric::kGpuUtil)->value, 2);
  });
}

TEST_F(TelemetryIngestTest, WithoutAFeedOnlyReadsAndDecodes) {
  TelemetryIngest ingest(nullptr);
  const auto batch = three_ticks("GPU-a", 0);
  const auto decoded = take(ingest, report_body(batch));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->telemetry, batch);
  const auto quiet = take(ingest, report_body({}));  // no telemetry member at all
  ASSERT_TRUE(quiet);
  EXPECT_TRUE(quiet->telemetry.samples.empty());
}

TEST_F(TelemetryIngestTest, RefusesBadBodiesAndFramesAsTheReportWould) {
  controller::SeriesFeed feed;
  TelemetryIngest ingest(&feed);
  EXPECT_EQ(take(ingest, "{\"applied_generation\": ").error().code, "malformed_json");
  EXPECT_EQ(take(ingest, R"({"applied_generation": 1})").error().code, "invalid_message");
  const auto garbage =
      take(ingest, R"({"applied_generation": 1, "workloads": [], "telemetry": "not base64!"})");
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().code, "invalid_message");
  model::TelemetryBatch huge;
  for (size_t i = 0; i <= model::kMaxTelemetryXids; ++i) {
    huge.xids.push_back({"GPU-a", kT0 + static_cast<int64_t>(i), 13});
  }
  const auto too_large = take(ingest, report_body(huge));
  ASSERT_FALSE(too_large);
  EXPECT_EQ(too_large.error().code, "telemetry_too_large");
  EXPECT_EQ(feed.accepted(), 0u);
}

struct FakeWriter : store::RollupWriter {
  explicit FakeWriter(std::vector<monitor::RollupRow>& rows) : rows(rows) {}
  Status write(std::span<const monitor::RollupRow> written) override {
    EXPECT_LE(written.size(), kRollupRowsPerWrite);
    rows.insert(rows.end(), written.begin(), written.end());
    return {};
  }
  std::vector<monitor::RollupRow>& rows;
};

TEST(RollupPersister, WritesEveryCompletedRowTheLastAtItsEnd) {
  controller::SeriesFeed feed;
  feed.set_owner("GPU-a", "n-1");
  std::vector<monitor::RollupRow> written;
  {
    RollupPersister persister(feed, std::make_unique<FakeWriter>(written));
    for (int first = 0; first < 181; first += 3) feed.ingest("n-1", three_ticks("GPU-a", first));
  }  // seconds 0-182: minutes 0, 1 and 2 closed
  ASSERT_EQ(written.size(), 3u);
  EXPECT_EQ(written[2].bucket_start_ms, kT0 + 2 * monitor::kMinuteMs);
  EXPECT_TRUE(feed.take_rollups(10).empty());
}

}  // namespace
}  // namespace gpurent::server
