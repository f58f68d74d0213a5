#include "controller/series_feed.h"

#include <algorithm>

namespace gpurent::controller {

using monitor::Metric;
using monitor::MetricSample;

SeriesFeed::SeriesFeed(monitor::StoreOptions options) : store_(options) {}

void SeriesFeed::set_owner(std::string_view gpu_uuid, std::string_view node_id) {
  std::lock_guard lock(mutex_);
  if (!owner_.contains(gpu_uuid)) owner_.emplace(gpu_uuid, node_id);
}

bool SeriesFeed::owned_by(std::string_view gpu_uuid, std::string_view node_id) const {
  const auto owner = owner_.find(gpu_uuid);
  return owner != owner_.end() && owner->second == node_id;
}

void SeriesFeed::ingest_locked(std::string_view gpu_uuid, std::string_view node_id,
                               std::span<const MetricSample> samples) {
  if (!owned_by(gpu_uuid, node_id)) {
    refused_ += samples.size();
    return;
  }
  const auto result = store_.ingest(gpu_uuid, node_id, samples);
  accepted_ += result.accepted;
  refused_ += result.out_of_order + result.too_late;
}

void SeriesFeed::ingest(std::string_view node_id, const model::TelemetryBatch& batch) {
  std::lock_guard lock(mutex_);
  const auto& samples = batch.samples;
  // A decoded batch holds each GPU's samples together (model/telemetry.h): one run per GPU, one
  // owner lookup and one store lookup per run. A batch in another order is still right, in more
  // runs.
  for (size_t begin = 0; begin < samples.size();) {
    size_t end = begin + 1;
    while (end < samples.size() && samples[end].uuid == samples[begin].uuid) ++end;
    scratch_.clear();
    for (size_t i = begin; i < end; ++i) {
      const model::GpuSample& s = samples[i];
      const auto put = [&](Metric metric, const auto& field) {
        if (field) scratch_.push_back({metric, s.time_ms, static_cast<double>(*field)});
      };
      put(Metric::kGpuUtil, s.gpu_util_pct);
      put(Metric::kMemCopyUtil, s.mem_util_pct);
      put(Metric::kFbUsed, s.fb_used_mib);
      put(Metric::kFbFree, s.fb_free_mib);
      put(Metric::kGpuTemp, s.temperature_c);
      put(Metric::kPowerUsage, s.power_w);
      put(Metric::kSmClock, s.sm_clock_mhz);
      put(Metric::kMemClock, s.mem_clock_mhz);
      put(Metric::kPcieTx, s.pcie_tx_kbps);
      put(Metric::kPcieRx, s.pcie_rx_kbps);
      put(Metric::kEccSbe, s.ecc_sbe_total);
      put(Metric::kEccDbe, s.ecc_dbe_total);
    }
    ingest_locked(samples[begin].uuid, node_id, scratch_);
    begin = end;
  }
  for (const auto& xid : batch.xids) {
    const MetricSample sample{Metric::kXidErrors, xid.time_ms, static_cast<double>(xid.code)};
    ingest_locked(xid.uuid, node_id, std::span(&sample, 1));
  }
}

void SeriesFeed::ingest(std::string_view node_id, std::span<const GpuSamples> gpus) {
  std::lock_guard lock(mutex_);
  for (const auto& gpu : gpus) ingest_locked(gpu.uuid, node_id, gpu.samples);
}

std::vector<monitor::RollupRow> SeriesFeed::take_rollups(size_t max_rows) {
  std::lock_guard lock(mutex_);
  auto completed = store_.take_completed_rollups();
  if (rollups_.empty()) {
    rollups_ = std::move(completed);
  } else {
    rollups_.insert(rollups_.end(), std::make_move_iterator(completed.begin()),
                    std::make_move_iterator(completed.end()));
  }
  const size_t count = std::min(max_rows, rollups_.size() - rollups_taken_);
  const auto first = rollups_.begin() + static_cast<std::ptrdiff_t>(rollups_taken_);
  std::vector<monitor::RollupRow> out(std::make_move_iterator(first),
                                      std::make_move_iterator(first + count));
  rollups_taken_ += count;
  // Rows keep coming while older ones are taken: drop the taken ones once they are half, so that
  // the buffer stays bounded by what is waiting and each row moves a bounded number of times.
  if (rollups_taken_ * 2 >= rollups_.size()) {
    rollups_.erase(rollups_.begin(),
                   rollups_.begin() + static_cast<std::ptrdiff_t>(rollups_taken_));
    rollups_taken_ = 0;
  }
  return out;
}

uint64_t SeriesFeed::accepted() const {
  std::lock_guard lock(mutex_);
  return accepted_;
}

uint64_t SeriesFeed::refused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

}  // namespace gpurent::controller
