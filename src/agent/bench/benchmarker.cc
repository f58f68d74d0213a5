#include "agent/bench/benchmarker.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

#include "agent/bench/gpu_bench.h"
#include "agent/tool_run.h"

namespace gpurent::agent {
namespace {

// The tool's GPUs are the requested ones, numbered by CUDA in the order it sees them: each is
// given its node index by UUID, and the peers follow.
Result<model::NodeBenchmark> renumbered(model::NodeBenchmark measured,
                                        const std::vector<model::Gpu>& node_gpus) {
  std::map<int, int> index_of;  // the tool's index -> the node's
  for (auto& gpu : measured.gpus) {
    const auto on_node = std::ranges::find(node_gpus, gpu.uuid, &model::Gpu::uuid);
    if (on_node == node_gpus.end()) {
      return fail(Error::invalid(
          "invalid_benchmark",
          fmt::format("the tool measured GPU {} ('{}'), not one asked for", gpu.index, gpu.uuid)));
    }
    index_of[gpu.index] = on_node->index;
    gpu.index = on_node->index;
  }
  for (auto& peer : measured.peers) {
    peer.from = index_of.at(peer.from);
    peer.to = index_of.at(peer.to);
  }
  std::ranges::sort(measured.gpus, {}, &model::GpuBenchmark::index);
  return measured;
}

}  // namespace

Benchmarker::Benchmarker(std::vector<model::Gpu> gpus, bool simulated, std::filesystem::path tool)
    : gpus_(std::move(gpus)), simulated_(simulated), tool_(std::move(tool)) {}

Benchmarker::~Benchmarker() {
  if (worker_.joinable()) worker_.join();
}

void Benchmarker::want(const std::optional<model::BenchmarkRequest>& request) {
  std::lock_guard lock(mutex_);
  if (!request || request->id == started_ || running_) return;
  started_ = request->id;
  if (simulated_) {  // the catalog's figures: nothing to wait for
    done_ = measure(*request);
    return;
  }
  running_ = true;
  if (worker_.joinable()) worker_.join();  // ended: running_ was false
  spdlog::info("benchmark_started request={} gpus={} reason={}", request->id, request->gpus.size(),
               model::to_string(request->reason));
  worker_ = std::thread([this, request = *request] {
    auto outcome = measure(request);
    if (outcome.result) {
      spdlog::info("benchmark_done request={} gpus={}", request.id, outcome.result->gpus.size());
    } else {
      spdlog::warn("benchmark_failed request={}: {}", request.id, outcome.error);
    }
    std::lock_guard lock(mutex_);
    done_ = std::move(outcome);
    running_ = false;
  });
}

std::optional<model::BenchmarkOutcome> Benchmarker::outcome(int64_t request_id) const {
  std::lock_guard lock(mutex_);
  if (!done_ || done_->request != request_id) return std::nullopt;
  return done_;
}

model::BenchmarkOutcome Benchmarker::measure(const model::BenchmarkRequest& request) const {
  model::BenchmarkOutcome outcome{.request = request.id, .result = std::nullopt, .error = ""};
  const auto asked = requested_gpus(request, gpus_);
  if (!asked) {
    outcome.error = asked.error().message;
    return outcome;
  }
  if (simulated_) {
    outcome.result = simulated_benchmark(*asked);
    return outcome;
  }
  if (tool_.empty()) {
    outcome.error =
        "gpurent-gpubench is not installed beside the agent or on PATH (it is built where the "
        "CUDA toolkit is: docs/node-benchmark.md)";
    return outcome;
  }
  std::string visible;
  for (const auto& gpu : *asked) visible += (visible.empty() ? "" : ",") + gpu.uuid;
  const auto ran = run_tool({.argv = {tool_.string()},
                             .env = {{"CUDA_VISIBLE_DEVICES", visible}},
                             .timeout = kBenchmarkTimeout,
                             .max_output_bytes = 1 << 20,
                             .with_stderr = false});
  if (!ran) {
    outcome.error = fmt::format("{} could not be run", tool_.string());
  } else if (ran->timed_out) {
    outcome.error = fmt::format("{} ran past {} minutes and was stopped", tool_.string(),
                                kBenchmarkTimeout.count());
  } else if (auto parsed = parse_gpubench(ran->output); !parsed) {
    outcome.error = parsed.error().message;
  } else if (auto measured = renumbered(std::move(*parsed), gpus_); !measured) {
    outcome.error = measured.error().message;
  } else {
    outcome.result = std::move(*measured);
  }
  return outcome;
}

std::filesystem::path Benchmarker::find_tool(const std::filesystem::path& own_executable) {
  std::error_code ignored;
  auto beside =
      std::filesystem::canonical(own_executable, ignored).parent_path() / "gpurent-gpubench";
  if (std::filesystem::exists(beside, ignored)) return beside;
  const char* path = std::getenv("PATH");
  std::istringstream directories(path ? path : "");
  for (std::string directory; std::getline(directories, directory, ':');) {
    if (directory.empty()) continue;
    const auto candidate = std::filesystem::path(directory) / "gpurent-gpubench";
    if (std::filesystem::exists(candidate, ignored)) return candidate;
  }
  return {};
}

}  // namespace gpurent::agent
