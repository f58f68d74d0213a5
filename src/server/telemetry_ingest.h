// The server's telemetry thread: decodes the telemetry of agents' reports and feeds the GPU series
// off the controller's (I/O) thread (controller/series_feed.h says why).
//
// Per report, the I/O thread takes the telemetry frame (the base64 string of model/telemetry.h)
// out of the parsed report and awaits take(); on the telemetry thread the frame is decoded and
// checked against the bounds (the report's 400s: invalid_message, telemetry_too_large), and, with a
// feed, its samples are ingested into the series of the node's GPUs and the batch is cut down to
// what Controller::apply_report acts on (controller::digest_for_apply_report). The coroutine
// resumes on the I/O thread with that batch, and the report is applied with it. Without a feed (a
// controller that ingests in apply_report itself) only the decoding moves.
//
// Threads: take() is called on the I/O thread and resumes there; the work runs on the one
// telemetry thread, in the order it was called, and touches nothing but the frame and the feed
// (which has its own lock). Bound: the work queued is bounded by the reports in flight (one per
// connection), as the committer's queue is. The destructor finishes the queued work.
#pragma once

#include <string>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>

#include "common/result.h"
#include "controller/series_feed.h"
#include "model/telemetry.h"

namespace gpurent::server {

class TelemetryIngest {
 public:
  // feed: null when the controller ingests the samples itself.
  explicit TelemetryIngest(controller::SeriesFeed* feed) : feed_(feed) {}
  ~TelemetryIngest() { thread_.join(); }
  TelemetryIngest(const TelemetryIngest&) = delete;
  TelemetryIngest& operator=(const TelemetryIngest&) = delete;

  // The node's report telemetry, decoded (and ingested, with a feed); errors as above.
  boost::asio::awaitable<Result<model::TelemetryBatch>> take(std::string node_id,
                                                             std::string frame);

 private:
  Result<model::TelemetryBatch> work(const std::string& node_id, std::string frame);

  controller::SeriesFeed* feed_;
  boost::asio::thread_pool thread_{1};
};

}  // namespace gpurent::server
