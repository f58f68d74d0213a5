// The server's telemetry thread: reads agents' reports, decodes their telemetry and feeds the GPU
// series off the controller's (I/O) thread (controller/series_feed.h says why).
//
// Per report, the I/O thread hands the report's body to take(); on the telemetry thread the
// report is read (model::read_node_report: the report's 400s, malformed_json and
// invalid_message), its telemetry frame (the base64 string of model/telemetry.h) is decoded and
// checked against the bounds (invalid_message, telemetry_too_large), and, with a feed, its samples
// are ingested into the series of the node's GPUs and the batch is cut down to what
// Controller::apply_report acts on (controller::digest_for_apply_report). The coroutine resumes on
// the I/O thread with the report, which is applied there. Without a feed (a controller that
// ingests in apply_report itself) only the reading and decoding move, which at thousands of nodes
// is still a real share of the I/O thread (bench/RESULTS.md).
//
// Threads: take() is called on the I/O thread and resumes there; the work runs on the one
// telemetry thread, in the order it was called, and touches nothing but the body and the feed
// (which has its own lock). Bound: the work queued is bounded by the reports in flight (one per
// connection), as the committer's queue is. The destructor finishes the queued work.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "common/result.h"
#include "common/threads.h"
#include "controller/series_feed.h"
#include "model/agent_protocol.h"
#include "model/telemetry.h"
#include "store/store.h"

namespace gpurent::server {

class TelemetryIngest {
 public:
  // feed: null when the controller ingests the samples itself.
  explicit TelemetryIngest(controller::SeriesFeed* feed) : feed_(feed) {
    boost::asio::post(thread_, [] { name_this_thread("telemetry"); });
  }
  ~TelemetryIngest() { thread_.join(); }
  TelemetryIngest(const TelemetryIngest&) = delete;
  TelemetryIngest& operator=(const TelemetryIngest&) = delete;

  // The node's report read from its body, with its telemetry decoded (and ingested, with a
  // feed); errors as above.
  boost::asio::awaitable<Result<model::NodeReport>> take(std::string node_id, std::string body);

 private:
  Result<model::NodeReport> work(const std::string& node_id, const std::string& body);

  controller::SeriesFeed* feed_;
  boost::asio::thread_pool thread_{1};
};

// Moves the rollup rows that the series feed completes into the database (store::RollupWriter
// says why beside the store), on a thread of its own: every second, in transactions of at most
// kRollupRowsPerWrite rows. After each it pauses kRollupPausePerWrite times as long as the write
// took (at least kRollupWritePause), so that it holds SQLite's write lock, which the store's
// commits need, at most a tenth of the time: a minute boundary at tens of thousands of GPUs closes
// hundreds of thousands of rows, and written back to back they would hold the lock long enough to
// delay the commits that acknowledge reports and API requests. A write that fails is
// logged and its rows are dropped (they are derived data; the raw samples stay in memory). The
// destructor writes what is left, without pauses.
inline constexpr size_t kRollupRowsPerWrite = 1'000;
inline constexpr int kRollupPausePerWrite = 9;
inline constexpr std::chrono::milliseconds kRollupWritePause{1};

class RollupPersister {
 public:
  RollupPersister(controller::SeriesFeed& feed, std::unique_ptr<store::RollupWriter> writer);
  ~RollupPersister();
  RollupPersister(const RollupPersister&) = delete;
  RollupPersister& operator=(const RollupPersister&) = delete;

 private:
  void loop();
  // Writes rows until the feed has none left (or stopping); false when stopping.
  void drain(bool pause);

  controller::SeriesFeed& feed_;
  std::unique_ptr<store::RollupWriter> writer_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace gpurent::server
