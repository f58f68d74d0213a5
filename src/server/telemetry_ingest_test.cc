// The telemetry thread (telemetry_ingest.h): a report's frame is decoded and ingested off the
// calling thread, which resumes with the digest; bad frames are the report's 400s; the rollup
// persister writes every completed row, the last ones at its destruction.
#include "server/telemetry_ingest.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <thread>

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

std::string base64_frame(const model::TelemetryBatch& batch) {
  Json j;
  model::to_json(j, batch);
  return j.get<std::string>();
}

class TelemetryIngestTest : public ::testing::Test {
 protected:
  // Runs take() as the report handler does, on this (the "I/O") thread.
  Result<model::TelemetryBatch> take(TelemetryIngest& ingest, std::string frame) {
    Result<model::TelemetryBatch> answer = fail(Error::internal("not answered"));
    const auto io_thread = std::this_thread::get_id();
    asio::co_spawn(
        io_,
        [&]() -> asio::awaitable<void> {
          answer = co_await ingest.take("n-1", std::move(frame));
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

TEST_F(TelemetryIngestTest, DecodesIngestsAndAnswersTheDigestOnTheCallersThread) {
  controller::SeriesFeed feed;
  feed.set_owner("GPU-a", "n-1");
  TelemetryIngest ingest(&feed);
  const auto digest = take(ingest, base64_frame(three_ticks("GPU-a", 0)));
  ASSERT_TRUE(digest) << digest.error().message;
  EXPECT_TRUE(resumed_on_io_thread_);
  ASSERT_EQ(digest->samples.size(), 2u);  // the first and the newest
  EXPECT_EQ(digest->samples[0].gpu_util_pct, 0);
  EXPECT_EQ(digest->samples[1].gpu_util_pct, 2);
  EXPECT_EQ(feed.accepted(), 3u);
  feed.read([](const monitor::SeriesStore& series) {
    EXPECT_EQ(series.latest("GPU-a", monitor::Metric::kGpuUtil)->value, 2);
  });
}

TEST_F(TelemetryIngestTest, WithoutAFeedOnlyDecodes) {
  TelemetryIngest ingest(nullptr);
  const auto batch = three_ticks("GPU-a", 0);
  const auto decoded = take(ingest, base64_frame(batch));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(*decoded, batch);
}

TEST_F(TelemetryIngestTest, RefusesBadFramesAsTheReportWould) {
  controller::SeriesFeed feed;
  TelemetryIngest ingest(&feed);
  const auto garbage = take(ingest, "not base64!");
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().code, "invalid_message");
  model::TelemetryBatch huge;
  for (size_t i = 0; i <= model::kMaxTelemetryXids; ++i) {
    huge.xids.push_back({"GPU-a", kT0 + static_cast<int64_t>(i), 13});
  }
  const auto too_large = take(ingest, base64_frame(huge));
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
