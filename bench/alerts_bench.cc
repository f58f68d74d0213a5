// One alert evaluation of the controller over a large fleet, on one thread (issue 5's rules, as
// the server runs them every kAlertEvaluationInterval on the controller's thread, where nothing
// else runs meanwhile: a report or a long-poll answer waits for it).
//
// Fleet: --nodes simulated nodes of 8 h100-80g (default 5,000: 40,000 GPUs), every GPU with one
// sample of each of monitor::Metric's metrics (as a report's telemetry brings them), and
// --tasks one-GPU tasks of one array running (default 8,000: the fleet benchmark's array), so
// that the instances' utilisation rules have holders to average.
// Timed, in this thread's CPU time, --rounds times (default 9): one Controller::tick() five
// seconds after the previous one (an evaluation is due: the built-in rules over every node and
// GPU), and one tick a second later (none is due: the rest of what a tick does), each after a
// new sample of every GPU. Prints the median and the range of each, and their difference.
//
// Usage: gpurent_alerts_bench [--nodes N] [--tasks T] [--rounds R]
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "controller/controller.h"
#include "controller_bench.h"

namespace {

using namespace gpurent;
using bench::kGpusPerNode;
using controller::Controller;

[[noreturn]] void die(std::string_view what) { bench::die("alerts_bench", what); }

// One sample of every metric for each GPU of each node, at the clock's time.
void sample_every_gpu(Controller& ctl, const std::vector<std::string>& node_ids, int64_t t_ms) {
  std::vector<controller::GpuSamples> gpus(kGpusPerNode);
  for (size_t n = 0; n < node_ids.size(); ++n) {
    for (int g = 0; g < kGpusPerNode; ++g) {
      gpus[g].uuid = fmt::format("GPU-{:06}-{}", n, g);
      gpus[g].samples.clear();
      for (size_t m = 0; m < monitor::kMetricCount; ++m) {
        // Nothing wrong: cool, no ECC or XID errors; busy enough not to be idle.
        const auto metric = static_cast<monitor::Metric>(m);
        const double value = metric == monitor::Metric::kGpuTemp   ? 55.0
                             : metric == monitor::Metric::kGpuUtil ? 90.0
                             : metric == monitor::Metric::kEccDbe ||
                                     metric == monitor::Metric::kEccSbe ||
                                     metric == monitor::Metric::kXidErrors
                                 ? 0.0
                                 : 1000.0;
        gpus[g].samples.push_back({metric, t_ms, value});
      }
    }
    if (!ctl.fleet().ingest_gpu_samples(node_ids[n], gpus)) die("ingest");
  }
}

struct Spread {
  double median = 0, low = 0, high = 0;
};

Spread spread(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {values[values.size() / 2], values.front(), values.back()};
}

}  // namespace

int main(int argc, char** argv) {
  bench::Flags flags("alerts_bench", argc, argv);
  const int nodes = flags.integer("--nodes", 5'000);
  const int tasks = flags.integer("--tasks", 8'000);
  const int rounds = flags.integer("--rounds", 9);
  flags.check();
  if (nodes < 1 || tasks < 0 || tasks > nodes * kGpusPerNode || rounds < 1) {
    die("--nodes and --rounds must be positive, --tasks at most 8 per node");
  }
  spdlog::set_level(spdlog::level::warn);  // one line per registered node otherwise

  bench::BenchFleet fleet(nodes);
  Controller& ctl = fleet.ctl;
  const model::Principal& caller = fleet.caller;
  const std::vector<std::string>& node_ids = fleet.node_ids;
  ManualClock& clock = fleet.clock;
  if (tasks > 0) {
    model::JobSpec spec;
    spec.task.gpu_types = {"h100-80g"};
    spec.task.gpu_count = 1;
    spec.task.command = {"sleep", "infinity"};
    spec.array = tasks;
    if (auto created = ctl.create_job(caller, spec, std::nullopt, ""); !created) {
      die(created.error().message);
    }
    bench::report_all_running(ctl, node_ids);
  }
  ctl.take_changes();

  std::vector<double> due_ms, not_due_ms;
  const auto timed_tick = [&](std::vector<double>& into) {
    sample_every_gpu(ctl, node_ids, to_unix_ms(clock.now()));
    const double before = bench::thread_cpu_seconds();
    ctl.tick();
    into.push_back((bench::thread_cpu_seconds() - before) * 1e3);
    ctl.take_changes();
  };
  timed_tick(due_ms);  // the first evaluation: every GPU's alert state is new
  due_ms.clear();
  for (int round = 0; round < rounds; ++round) {
    clock.advance(controller::kAlertEvaluationInterval);
    timed_tick(due_ms);
    clock.advance(std::chrono::seconds(1));
    timed_tick(not_due_ms);
  }
  const Spread due = spread(due_ms);
  const Spread not_due = spread(not_due_ms);
  fmt::print(
      "nodes={} gpus={} tasks={} rounds={}: tick with an evaluation {:.2f} ms ({:.2f}-{:.2f}), "
      "without {:.2f} ms ({:.2f}-{:.2f}); the evaluation {:.2f} ms\n",
      nodes, nodes * kGpusPerNode, tasks, rounds, due.median, due.low, due.high, not_due.median,
      not_due.low, not_due.high, due.median - not_due.median);
  return 0;
}
