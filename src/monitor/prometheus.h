// Prometheus text exposition (format 0.0.4) and the GPU families in dcgm-exporter's names.
//
// Exposition collects samples by family and renders them: one `# HELP` and one `# TYPE` line per
// family, families in the order they were first added, samples in the order added. Label values
// escape backslash, double quote and newline; help text escapes backslash and newline. Values are
// written in the shortest form that reads back exactly, with NaN, +Inf and -Inf as Prometheus
// spells them. Histograms render cumulative `_bucket{le="..."}` lines ending with le="+Inf", then
// `_sum` and `_count`.
//
// add_gpu_families renders the latest GPU samples as dcgm-exporter does (DCGM_FI_DEV_GPU_UTIL ...
// with labels gpu, UUID, modelName, Hostname), plus instance_id and tenant when the GPU is rented,
// so dashboards made for dcgm-exporter work unchanged.
//
// Thread-safety: Exposition has none (build one per scrape). LatencyHistogram is thread-safe and
// lock-free: observe() is a few relaxed atomic increments, callable from any I/O thread; a
// snapshot taken while others observe may miss observations in flight, but its buckets and count
// always agree with each other (the count is the sum of its buckets).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "monitor/gpu_metrics.h"
#include "monitor/series_store.h"

namespace gpurent::monitor {

using Labels = std::vector<std::pair<std::string, std::string>>;

struct HistogramSnapshot {
  std::vector<double> bounds;    // upper bounds, increasing; +Inf implied after the last
  std::vector<uint64_t> counts;  // per bucket, not cumulative; bounds.size() + 1 entries
  double sum = 0;
  uint64_t count = 0;
};

// API latency in seconds, fixed buckets from 0.5 ms to 10 s.
class LatencyHistogram {
 public:
  static constexpr std::array<double, 14> kBoundsSeconds = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

  void observe(std::chrono::microseconds latency);
  HistogramSnapshot snapshot() const;

 private:
  std::array<std::atomic<uint64_t>, kBoundsSeconds.size() + 1> counts_{};
  std::atomic<uint64_t> sum_us_{0};
};

class Exposition {
 public:
  enum class Type { kGauge, kCounter, kHistogram };

  // Errors (kInvalidArgument): "invalid_metric_name", "invalid_label_name", and
  // "metric_type_conflict" when a family is added again with another type.
  Status gauge(std::string_view name, std::string_view help, const Labels& labels, double value);
  Status counter(std::string_view name, std::string_view help, const Labels& labels, double value);
  Status histogram(std::string_view name, std::string_view help, const Labels& labels,
                   const HistogramSnapshot& histogram);

  std::string render() const;

 private:
  struct Family {
    std::string name;
    std::string help;
    Type type;
    std::string samples;  // rendered lines
  };
  Result<Family*> family(std::string_view name, std::string_view help, Type type,
                         const Labels& labels);

  std::vector<Family> families_;
};

// What /metrics says about one GPU besides its values.
struct GpuInfo {
  std::string uuid;
  int index = 0;            // the device index on its node: the `gpu` label
  std::string hostname;     // the node's host name
  std::string model_name;   // e.g. "NVIDIA H100 80GB HBM3"
  std::string instance_id;  // empty when not rented
  std::string tenant;       // empty when not rented
};

struct GpuReading {
  GpuInfo gpu;
  std::vector<std::pair<Metric, double>> values;
};

// The latest value of each metric of one GPU, leaving out those older than max_age_ms: a GPU that
// stopped reporting disappears from /metrics rather than showing stale values.
GpuReading latest_reading(const SeriesStore& store, GpuInfo gpu, int64_t now_ms,
                          int64_t max_age_ms);

// One family per metric (in metric_table() order) with every GPU that has a value for it.
Status add_gpu_families(Exposition& exposition, std::span<const GpuReading> readings);

}  // namespace gpurent::monitor
