// The controller's and the store's part of the fleet benchmark's array phase (bench/fleet_bench.py,
// issue 3), without HTTP, on one thread, stage by stage: where the server's CPU goes when one
// POST /v1/jobs asks for an array of N one-GPU tasks on a fleet of N / 8 eight-GPU nodes.
//
// Stages, each timed in this thread's CPU time:
//   create    Controller::create_job (N members made, queued and placed)
//   rows      take_changes(kStoreRows) (the ChangeSet: the members' rows serialized)
//   commit    the store's commit of that ChangeSet (the committer thread's work)
//   desired   every node's desired state built and written as JSON (the long-poll answers)
//   reports   every node's report of its 8 tasks running applied, in batches of --batch nodes
//             (a group commit's worth), each batch's ChangeSet taken
//   commit    the store's commits of those batches
// Run it twice in one process with --rounds 2 to see the second array on a warm heap (the first
// array is cancelled and its members removed between rounds).
//
// Usage: gpurent_array_bench [--tasks N] [--batch K] [--store PATH|postgres://...] [--rounds R]
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "controller/controller.h"
#include "controller_bench.h"
#include "model/codec.h"
#include "store/store.h"

namespace {

using namespace gpurent;
using bench::kGpusPerNode;
using controller::Controller;

[[noreturn]] void die(std::string_view what) { bench::die("array_bench", what); }

// Runs `work`, prints its CPU time, its wall time (a PostgreSQL store's commit works in the
// database's process too), what it grew the resident set by and the page faults it took under
// `name`, returns what it returned.
template <class Work>
auto timed(std::string_view name, Work work) {
  const double before = bench::thread_cpu_seconds();
  const auto wall_before = std::chrono::steady_clock::now();
  const double resident_before = bench::resident_mib();
  const long faults_before = bench::minor_faults();
  auto result = work();
  const std::chrono::duration<double, std::milli> wall =
      std::chrono::steady_clock::now() - wall_before;
  fmt::print("  {:<8} {:8.1f} ms cpu {:8.1f} ms wall  {:+7.1f} MiB resident  {:6} faults\n", name,
             (bench::thread_cpu_seconds() - before) * 1e3, wall.count(),
             bench::resident_mib() - resident_before, bench::minor_faults() - faults_before);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Flags flags("array_bench", argc, argv);
  const int tasks = flags.integer("--tasks", 8'000);
  const int batch = flags.integer("--batch", 50);
  const int rounds = flags.integer("--rounds", 1);
  const std::string store_path = flags.text("--store", "");
  flags.check();
  if (tasks < 1 || batch < 1 || rounds < 1) die("--tasks, --batch and --rounds must be positive");
  const int nodes = (tasks + kGpusPerNode - 1) / kGpusPerNode;
  spdlog::set_level(spdlog::level::warn);  // one line per registered node otherwise

  bench::BenchFleet fleet(nodes);
  Controller& ctl = fleet.ctl;
  const model::Principal& caller = fleet.caller;
  const std::vector<std::string>& node_ids = fleet.node_ids;
  bench::OptionalStore store("array_bench", store_path);
  const auto commit = [&](const controller::ChangeSet& changes) {
    store.commit(changes);
    return 0;
  };
  commit(ctl.take_changes(controller::Controller::Form::kStoreRows));

  fmt::print("tasks={} nodes={} report batch={} store={}\n", tasks, nodes, batch,
             store ? store_path : "none");
  for (int round = 1; round <= rounds; ++round) {
    fmt::print("round {}:\n", round);
    model::JobSpec spec;
    spec.task.gpu_types = {"h100-80g"};
    spec.task.gpu_count = 1;
    spec.task.command = {"sleep", "infinity"};
    spec.array = tasks;
    const auto job = timed("create", [&] {
      auto created = ctl.create_job(caller, spec, std::nullopt, "");
      if (!created) die(created.error().message);
      return created->job.id;
    });
    auto changes =
        timed("rows", [&] { return ctl.take_changes(controller::Controller::Form::kStoreRows); });
    timed("commit", [&] { return commit(changes); });
    const auto answers = timed("desired", [&] {
      size_t bytes = 0;
      for (const auto& node : node_ids) {
        auto desired = ctl.fleet().desired_state(node);
        if (!desired) die(desired.error().message);
        bytes += model::desired_state_json(*desired).size();
      }
      return bytes;
    });
    std::vector<controller::ChangeSet> batches;
    timed("reports", [&] {
      for (size_t n = 0; n < node_ids.size(); ++n) {
        const auto desired = ctl.fleet().desired_state(node_ids[n]);
        model::NodeReport report{desired->generation, {}};
        for (const auto& w : desired->workloads) {
          report.workloads.push_back(
              {w.instance_id, w.run, model::WorkloadPhase::kRunning, std::nullopt, ""});
        }
        if (!ctl.apply_report(node_ids[n], report)) die("report");
        if ((n + 1) % static_cast<size_t>(batch) == 0 || n + 1 == node_ids.size()) {
          batches.push_back(ctl.take_changes(controller::Controller::Form::kStoreRows));
        }
      }
      return 0;
    });
    timed("commit", [&] {
      for (const auto& b : batches) commit(b);
      return 0;
    });
    const auto view = ctl.jobs().get(caller, job);
    int running = 0;
    for (const auto& task : (*view)->tasks) running += task.state == model::JobState::kRunning;
    fmt::print("  {} of {} tasks running; desired answers {:.1f} MB\n", running, tasks,
               static_cast<double>(answers) / 1e6);
    if (running != tasks) die("not every task runs");
    // Cancelled and gone before the next round.
    if (!ctl.cancel_job(caller, job)) die("cancel");
    for (const auto& node : node_ids) {
      const auto desired = ctl.fleet().desired_state(node);
      model::NodeReport report{desired->generation, {}};
      if (!ctl.apply_report(node, report)) die("report");
    }
    commit(ctl.take_changes(controller::Controller::Form::kStoreRows));
  }
  return 0;
}
