// Ingestion into monitor::SeriesStore on one thread, and the memory it holds per sample.
//
// Fleet: `--gpus` GPUs (default 200), each reporting the 13 metrics of monitor::Metric at 1 Hz for
// `--seconds` (default 7200: one whole raw chunk per series), sent as the agent sends them: one
// batch per GPU per 5-second heartbeat. Each GPU alternates busy and idle periods of 5 to 30
// minutes; values are what NVML reports: integer utilisation, temperature, clocks and MiB, power
// in milliwatts (so W with three decimals), PCIe throughput in KB/s; ECC and XID stay 0.
// Timestamps: the sampling tick plus a uniform jitter of +-`--jitter-ms` (default 0: the agent
// stamps samples with the tick; 2 models stamping with the read time).
// Timed: ingest() of every batch and a compact() + take_completed_rollups() every simulated
// minute (what the server does); untimed: generating the next minute of samples.
// Memory: SeriesStore::memory() at the end: raw bytes (chunks, growth slack, chunk objects) and
// total bytes (with rollups and per-GPU/per-series bookkeeping) over the raw samples held.
//
// Usage: gpurent_monitor_bench [--gpus N] [--seconds S] [--jitter-ms J] [--seed S]
// Prints one Markdown table row.
#include <fmt/format.h>

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/random.h"
#include "monitor/series_store.h"

namespace {

using gpurent::Rng;
using gpurent::monitor::Metric;
using gpurent::monitor::MetricSample;
using gpurent::monitor::SeriesStore;
using Clock = std::chrono::steady_clock;

constexpr int64_t kStart = 1'764'547'200'000;  // 2025-12-01T00:00:00Z
constexpr int kHeartbeatSeconds = 5;
constexpr int kWindowSeconds = 60;
constexpr double kFbTotalMib = 81'559;

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// One GPU's simulated state between samples.
struct GpuState {
  bool busy = false;
  int phase_left_s = 0;
  double temperature = 35;
  double fb_used = 512;
};

double noise(Rng& rng, int spread) { return static_cast<double>(rng.uniform(spread)); }

// The 13 samples of one GPU at one tick.
void sample_gpu(Rng& rng, GpuState& gpu, int64_t t, std::vector<MetricSample>& out) {
  if (gpu.phase_left_s-- <= 0) {
    gpu.busy = !gpu.busy;
    gpu.phase_left_s = 300 + static_cast<int>(rng.uniform(1500));
    gpu.fb_used = gpu.busy ? 40'000 + noise(rng, 40'000) : 512;
  }
  const bool busy = gpu.busy;
  const double target = busy ? 78 : 38;
  gpu.temperature += (target - gpu.temperature) * 0.01;
  const double values[] = {
      busy ? 92 + noise(rng, 9) : 0,                                               // gpu_util
      busy ? 30 + noise(rng, 31) : 0,                                              // mem_copy_util
      gpu.fb_used,                                                                 // fb_used
      kFbTotalMib - gpu.fb_used,                                                   // fb_free
      std::round(gpu.temperature),                                                 // gpu_temp
      (busy ? 600'000 + noise(rng, 100'000) : 70'000 + noise(rng, 2'000)) / 1000,  // power
      busy ? 1980.0 : 345.0,                                                       // sm_clock
      2619,                                                                        // mem_clock
      busy ? 10'000 + noise(rng, 400'000) : noise(rng, 50),                        // pcie_tx
      busy ? 10'000 + noise(rng, 400'000) : noise(rng, 50),                        // pcie_rx
      0,                                                                           // ecc_sbe
      0,                                                                           // ecc_dbe
      0,                                                                           // xid_errors
  };
  for (size_t m = 0; m < std::size(values); ++m) {
    out.push_back({static_cast<Metric>(m), t, values[m]});
  }
}

}  // namespace

int main(int argc, char** argv) {
  int gpus = 200;
  int seconds = 7200;
  int jitter_ms = 0;
  uint64_t seed = 42;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view arg = argv[i];
    if (arg == "--gpus") gpus = std::atoi(argv[i + 1]);
    if (arg == "--seconds") seconds = std::atoi(argv[i + 1]);
    if (arg == "--jitter-ms") jitter_ms = std::atoi(argv[i + 1]);
    if (arg == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  Rng rng(seed);
  std::vector<GpuState> states(static_cast<size_t>(gpus));
  std::vector<std::string> uuids;
  for (int g = 0; g < gpus; ++g) uuids.push_back(fmt::format("GPU-{:08x}-bench", g));

  SeriesStore store;
  // Per GPU, the samples of one window, in heartbeat batches.
  std::vector<std::vector<MetricSample>> window(static_cast<size_t>(gpus));
  double wall_s = 0;
  double cpu_s = 0;
  size_t samples = 0;
  size_t refused = 0;
  size_t rollup_rows = 0;
  for (int window_start = 0; window_start < seconds; window_start += kWindowSeconds) {
    const int window_seconds = std::min(kWindowSeconds, seconds - window_start);
    for (int g = 0; g < gpus; ++g) {
      auto& batch = window[static_cast<size_t>(g)];
      batch.clear();
      for (int s = 0; s < window_seconds; ++s) {
        const int64_t tick = kStart + int64_t{window_start + s} * 1000;
        const int64_t jitter =
            jitter_ms == 0
                ? 0
                : static_cast<int64_t>(rng.uniform(2 * uint64_t(jitter_ms) + 1)) - jitter_ms;
        sample_gpu(rng, states[static_cast<size_t>(g)], tick + jitter, batch);
      }
    }
    const auto began = Clock::now();
    const double cpu_began = thread_cpu_s();
    const size_t per_heartbeat = size_t{13} * kHeartbeatSeconds;
    for (size_t offset = 0; offset < window[0].size(); offset += per_heartbeat) {
      for (int g = 0; g < gpus; ++g) {
        const auto& batch = window[static_cast<size_t>(g)];
        const size_t n = std::min(per_heartbeat, batch.size() - offset);
        const auto result = store.ingest(uuids[static_cast<size_t>(g)], "node-bench",
                                         std::span(batch).subspan(offset, n));
        samples += result.accepted;
        refused += result.out_of_order + result.too_late;
      }
    }
    store.compact(kStart + int64_t{window_start + window_seconds} * 1000);
    rollup_rows += store.take_completed_rollups().size();
    cpu_s += thread_cpu_s() - cpu_began;
    wall_s += std::chrono::duration<double>(Clock::now() - began).count();
  }
  const auto memory = store.memory();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  fmt::print(
      "| GPUs | seconds | jitter | samples | refused | samples/s (wall) | samples/s (CPU) | "
      "raw B/sample | total B/sample | rollup rows out | max RSS |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  fmt::print("| {} | {} | +-{} ms | {} | {} | {:.0f} | {:.0f} | {:.2f} | {:.2f} | {} | {} MiB |\n",
             gpus, seconds, jitter_ms, samples, refused, static_cast<double>(samples) / wall_s,
             static_cast<double>(samples) / cpu_s,
             static_cast<double>(memory.raw_bytes) / static_cast<double>(memory.raw_samples),
             static_cast<double>(memory.total_bytes) / static_cast<double>(memory.raw_samples),
             rollup_rows, usage.ru_maxrss / 1024);
  return 0;
}
