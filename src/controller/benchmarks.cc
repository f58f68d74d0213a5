// The controller's side of the node benchmark (gpu_benchmarks.h has the figures): when a node is
// asked to measure its GPUs (at join, after a quarantine release, on an operator's request, when
// idle with old figures), keeping the GPUs being measured out of the scheduler's mask until the
// answer or the timeout, and what a slow GPU leads to.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "controller/controller.h"
#include "controller/internal.h"

namespace gpurent::controller {
namespace {

// How often the tick looks for timed-out requests and idle nodes due a benchmark.
constexpr Millis kBenchmarkCheckInterval{60'000};

std::string describe(const model::GpuBenchmark& figures) {
  const auto training = model::training_gflops(figures.gemm_gflops);
  return fmt::format("{:.1f} TFLOPS, {:.0f} GB/s",
                     training ? static_cast<double>(*training) / 1000 : 0.0,
                     static_cast<double>(figures.memory_mbps) / 1000);
}

// Whether the spec runs the template's own command (in the form it was given), not one of the
// tenant's in its place.
bool runs_template_command(const model::Template& t, const model::InstanceSpec& spec) {
  const bool command = spec.command == t.command || spec.command == t.process_command;
  return command && (spec.process_command.empty() || spec.process_command == t.process_command);
}

}  // namespace

Result<RecordedTraining> Controller::record_training_benchmark(const Principal& caller,
                                                               std::string_view instance_id,
                                                               std::string_view log) {
  if (!caller.is_operator()) return fail(forbidden("record benchmarks"));
  GPURENT_TRY(instance, instances_.get(caller, instance_id));
  GPURENT_TRY(benchmark, templates_.find(model::kResnet50Template));
  if (instance->spec.template_name != model::kResnet50Template ||
      !runs_template_command(*benchmark, instance->spec)) {
    return fail(Error::conflict("not_a_benchmark",
                                fmt::format("instance {} does not run the {} template's command",
                                            instance->id, model::kResnet50Template)));
  }
  if (instance->state != model::InstanceState::kStopped || instance->exit_code != 0) {
    return fail(Error::conflict(
        "benchmark_unfinished",
        fmt::format("instance {} is {}: a benchmark is recorded once it has stopped with exit "
                    "code 0",
                    instance->id, model::to_string(instance->state))));
  }
  GPURENT_TRY(report, model::resnet50_report(log));
  for (const auto& [node_id, node] : nodes_) {
    const auto gpu = std::ranges::find(node.gpus, report.gpu, &model::Gpu::uuid);
    if (gpu == node.gpus.end()) continue;
    if (gpu->type != instance->gpu_type) break;
    report.run.instance_id = instance->id;
    const model::TrainingRun& kept = benchmarks_.record_training(node, *gpu, std::move(report.run));
    return RecordedTraining{.node_id = node.id,
                            .gpu = gpu->uuid,
                            .gpu_index = gpu->index,
                            .gpu_type = gpu->type,
                            .run = kept};
  }
  return fail(Error::unprocessable(
      "invalid_benchmark_log",
      fmt::format("the log of instance {} names GPU '{}', which is no {} of a node", instance->id,
                  report.gpu, instance->gpu_type)));
}

Result<model::BenchmarkRequest> Controller::benchmark_node(const Principal& caller,
                                                           std::string_view node_id) {
  if (!caller.is_operator()) return fail(forbidden("benchmark nodes"));
  const auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return fail(Error::not_found("node", node_id));
  Node& node = it->second;
  if (node.state == NodeState::kDown) {
    return fail(Error::conflict("node_down", fmt::format("node {} is down", node.id)));
  }
  if (!node.answers_benchmarks) {
    return fail(Error::conflict(
        "benchmark_unsupported",
        fmt::format("the agent of node {} (version {}) does not run benchmarks: upgrade it",
                    node.id, node.agent_version)));
  }
  std::vector<std::string> idle;
  for (const auto* gpu : gpus_by_index(node)) {
    if (placements_.holders(gpu->uuid).empty() && !quarantines_.quarantined(gpu->uuid)) {
      idle.push_back(gpu->uuid);
    }
  }
  if (idle.empty()) {
    return fail(Error::conflict(
        "no_idle_gpus",
        fmt::format("every GPU of node {} holds work or is quarantined: nothing to measure "
                    "(drain it first to measure all)",
                    node.id)));
  }
  ask_benchmark(node, std::move(idle), model::BenchmarkReason::kOperator);
  return *node.benchmark;
}

void Controller::ask_benchmark(Node& node, std::vector<std::string> gpus,
                               model::BenchmarkReason reason) {
  if (node.benchmark) {
    for (auto& uuid : node.benchmark->gpus) {
      if (std::ranges::find(gpus, uuid) == gpus.end()) gpus.push_back(std::move(uuid));
    }
  }
  // In the node's order, as the agent measures them.
  std::vector<std::string> ordered;
  for (const auto* gpu : gpus_by_index(node)) {
    if (std::ranges::find(gpus, gpu->uuid) != gpus.end()) ordered.push_back(gpu->uuid);
  }
  benchmark_asked_ = true;
  tracker_.touch_node(node, /*desired_set_changed=*/true);
  tracker_.touch_node(node, /*desired_set_changed=*/false);  // the request is durable
  node.benchmark = model::BenchmarkRequest{
      .id = node.generation, .gpus = std::move(ordered), .reason = reason, .asked_at = now()};
  sync_gpu_availability(node);
  spdlog::info("benchmark_asked node={} request={} gpus={} reason={}", node.id, node.benchmark->id,
               node.benchmark->gpus.size(), model::to_string(reason));
}

void Controller::benchmark_new_gpus(Node& node) {
  if (!options_.benchmarks.on_join_and_release || !node.answers_benchmarks) return;
  std::vector<std::string> unmeasured;
  for (const auto& gpu : node.gpus) {
    if (benchmarks_.of_gpu(gpu.uuid) == nullptr && !quarantines_.quarantined(gpu.uuid) &&
        placements_.holders(gpu.uuid).empty()) {
      unmeasured.push_back(gpu.uuid);
    }
  }
  if (!unmeasured.empty()) {
    ask_benchmark(node, std::move(unmeasured), model::BenchmarkReason::kJoin);
  }
}

void Controller::drop_benchmark(Node& node) {
  node.benchmark.reset();
  tracker_.touch_node(node, /*desired_set_changed=*/true);
  tracker_.touch_node(node, /*desired_set_changed=*/false);
  sync_gpu_availability(node);
}

void Controller::take_benchmark(Node& node, const model::BenchmarkOutcome& outcome) {
  const model::BenchmarkRequest request = *node.benchmark;
  drop_benchmark(node);
  if (!outcome.result) {
    events_.record("", node.id, model::event_kind::kNodeBenchmarkFailed,
                   fmt::format("the benchmark of node {} failed: {}", node.name, outcome.error));
    spdlog::warn("benchmark_failed node={} request={} error=\"{}\"", node.id, request.id,
                 outcome.error);
    schedule();
    return;
  }
  const auto recorded = benchmarks_.record(node, request, *outcome.result);
  std::vector<std::string> lines;
  for (const auto& uuid : recorded) {
    const model::GpuBenchmarkHistory& history = *benchmarks_.of_gpu(uuid);
    lines.push_back(
        fmt::format("GPU {}: {}", history.gpu_index, describe(history.runs.back().figures)));
  }
  events_.record("", node.id, model::event_kind::kNodeBenchmarked,
                 fmt::format("node {} measured{} ({}): {}", node.name,
                             outcome.result->simulated ? " (simulated)" : "",
                             model::to_string(request.reason), fmt::join(lines, "; ")));
  // Judged after all are recorded: the node's own GPUs move its type's median.
  for (const auto& uuid : recorded) {
    const auto shortfall = benchmarks_.shortfall(uuid);
    if (!shortfall || shortfall->percent <= kSlowShortfallPercent) continue;
    const model::Gpu& gpu = *std::ranges::find(node.gpus, uuid, &model::Gpu::uuid);
    const std::string what = fmt::format(
        "GPU {} of node {} measures {:.0f}% below the median of its type on {} ({} vs {})",
        gpu.index, node.name, shortfall->percent, shortfall->figure, shortfall->measured,
        shortfall->median);
    spdlog::warn("gpu_slow node={} gpu={} figure={} percent={:.1f}", node.id, uuid,
                 shortfall->figure, shortfall->percent);
    if (options_.benchmarks.quarantine_slow && !quarantines_.quarantined(uuid)) {
      events_.record("", node.id, model::event_kind::kGpuSlow,
                     fmt::format("{}: quarantined by policy", what));
      quarantine_gpu(node, gpu,
                     {.cause = "slow",
                      .message = fmt::format("{:.0f}% below its type on {}", shortfall->percent,
                                             shortfall->figure)});
    } else {
      events_.record("", node.id, model::event_kind::kGpuSlow, what);
    }
  }
  schedule();
}

void Controller::benchmark_tick() {
  const Timestamp t = now();
  // Nothing to look for: no request was ever made, and idle nodes are not measured.
  if (!benchmark_asked_ && options_.benchmarks.idle_interval.count() <= 0) return;
  if (t < next_benchmark_check_) return;
  next_benchmark_check_ = t + kBenchmarkCheckInterval;
  const Millis idle_interval = options_.benchmarks.idle_interval;
  for (Node* node : nodes_.in_order()) {
    if (node->benchmark) {
      if (t - node->benchmark->asked_at > options_.benchmarks.timeout) {
        events_.record("", node->id, model::event_kind::kNodeBenchmarkFailed,
                       fmt::format("node {} did not answer its benchmark request within {} s",
                                   node->name, options_.benchmarks.timeout.count() / 1000));
        drop_benchmark(*node);
      }
      continue;
    }
    if (idle_interval.count() <= 0 || !node->answers_benchmarks ||
        node->state != NodeState::kReady || node->cordoned ||
        !placements_.on_node(node->id).empty()) {
      continue;
    }
    std::vector<std::string> due;
    for (const auto& gpu : node->gpus) {
      if (quarantines_.quarantined(gpu.uuid)) continue;
      const auto* history = benchmarks_.of_gpu(gpu.uuid);
      if (history == nullptr || history->runs.empty() ||
          t - history->runs.back().at >= idle_interval) {
        due.push_back(gpu.uuid);
      }
    }
    if (!due.empty()) ask_benchmark(*node, std::move(due), model::BenchmarkReason::kIdle);
  }
}

}  // namespace gpurent::controller
