// The agent's side of the node benchmark (model/benchmark.h): measures the GPUs the desired state
// names, one request at a time, on a thread of its own (on real GPUs the tool runs for a minute or
// more, and the reconciler must go on reporting meanwhile), and holds the outcome for the reports.
//
// Real GPUs are measured by gpurent-gpubench (gpubench.cu), run with CUDA_VISIBLE_DEVICES set to
// the requested GPUs' UUIDs; its figures are renumbered to the node's device indexes by UUID.
// Simulated GPUs answer at once, within want(), with their type's figures (simulated_benchmark). A
// tool that is missing, fails, hangs past kBenchmarkTimeout or prints what parse_gpubench refuses
// gives an outcome with an error, which the server records: the request is answered either way.
//
// Thread-safety: want() and outcome() from any thread; the destructor waits for a run in progress
// (the tool's, at most kBenchmarkTimeout).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "model/benchmark.h"
#include "model/node.h"

namespace gpurent::agent {

// The longest the tool may run: a full run on eight GPUs takes a few minutes.
inline constexpr std::chrono::minutes kBenchmarkTimeout{15};

class Benchmarker {
 public:
  // gpus: the node's; tool: gpurent-gpubench's path, "" where it was not found (real GPUs then
  // answer with an error saying so).
  Benchmarker(std::vector<model::Gpu> gpus, bool simulated, std::filesystem::path tool);
  ~Benchmarker();
  Benchmarker(const Benchmarker&) = delete;
  Benchmarker& operator=(const Benchmarker&) = delete;

  // The desired state's request: starts measuring when it is one not started yet. A request
  // while another runs waits for the next call after that one ended (the agent asks again at
  // every pass).
  void want(const std::optional<model::BenchmarkRequest>& request);
  // The outcome of the request with this id, once it has one.
  std::optional<model::BenchmarkOutcome> outcome(int64_t request_id) const;

  // Where gpurent-gpubench is: beside the agent's own executable, else on PATH; "" if neither.
  static std::filesystem::path find_tool(const std::filesystem::path& own_executable);

 private:
  model::BenchmarkOutcome measure(const model::BenchmarkRequest& request) const;

  const std::vector<model::Gpu> gpus_;
  const bool simulated_;
  const std::filesystem::path tool_;
  mutable std::mutex mutex_;
  int64_t started_ = 0;  // the id of the last request started
  bool running_ = false;
  std::optional<model::BenchmarkOutcome> done_;  // the last one finished
  std::thread worker_;
};

}  // namespace gpurent::agent
