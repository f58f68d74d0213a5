#include "server/telemetry_ingest.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/threads.h"
#include "controller/gpu_telemetry.h"
#include "model/agent_protocol.h"
#include "model/node_report_json.h"
#include "net/await_on.h"

namespace gpurent::server {

namespace asio = boost::asio;

Result<model::NodeReport> TelemetryIngest::work(const std::string& node_id,
                                                const std::string& body) {
  std::optional<std::string> frame;
  GPURENT_TRY(report, model::read_node_report(body, &frame));
  if (!frame) return report;
  GPURENT_TRY(batch, model::decode_telemetry_text(*frame));
  GPURENT_CHECK(model::check_telemetry_bounds(batch));
  if (feed_) {
    feed_->ingest(node_id, batch);
    batch = controller::digest_for_apply_report(std::move(batch));
  }
  report.telemetry = std::move(batch);
  return report;
}

asio::awaitable<Result<model::NodeReport>> TelemetryIngest::take(std::string node_id,
                                                                 std::string body) {
  // Named, not a temporary in the awaited call (GCC 12 miscompiles a capturing lambda there).
  auto read = [this, node_id = std::move(node_id), body = std::move(body)] {
    return work(node_id, body);
  };
  co_return co_await net::await_on(thread_, std::move(read));
}

RollupPersister::RollupPersister(controller::SeriesFeed& feed,
                                 std::unique_ptr<store::RollupWriter> writer)
    : feed_(feed), writer_(std::move(writer)), thread_([this] {
        name_this_thread("rollups");
        // A minute boundary closes a row per GPU and metric at once (480,000 at 40,000 GPUs):
        // derived data, written at leisure, not ahead of reports and API requests.
        deprioritize_this_thread(10);
        loop();
      }) {}

RollupPersister::~RollupPersister() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  drain(/*pause=*/false);  // what the last samples completed
}

void RollupPersister::drain(bool pause) {
  for (;;) {
    const auto rows = feed_.take_rollups(kRollupRowsPerWrite);
    if (rows.empty()) return;
    const auto began = std::chrono::steady_clock::now();
    if (auto written = writer_->write(rows); !written) {
      spdlog::error("{} gpu rollup rows not written: {}", rows.size(), written.error().message);
    }
    if (pause) {
      const auto took = std::chrono::steady_clock::now() - began;
      std::this_thread::sleep_for(std::max<std::chrono::steady_clock::duration>(
          kRollupWritePause, took * kRollupPausePerWrite));
    }
  }
}

void RollupPersister::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
    if (stopping_) return;
    lock.unlock();
    drain(/*pause=*/true);
    lock.lock();
  }
}

}  // namespace gpurent::server
