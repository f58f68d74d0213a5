// The controller's and the store's part of the fleet benchmark's array phase (bench/fleet_bench.py,
// issue 3), without HTTP, on one thread, stage by stage: where the server's CPU goes when one
// POST /v1/jobs asks for an array of N one-GPU tasks on a fleet of N / 8 eight-GPU nodes.
//
// Stages, each timed in this thread's CPU time:
//   create    Controller::create_job (N members made, queued and placed)
//   rows      take_changes_for_store (the ChangeSet: the members' rows serialized)
//   commit    the SQLite store's commit of that ChangeSet (the committer thread's work)
//   desired   every node's desired state built and written as JSON (the long-poll answers)
//   reports   every node's report of its 8 tasks running applied, in batches of --batch nodes
//             (a group commit's worth), each batch's ChangeSet taken
//   commit    the store's commits of those batches
// Run it twice in one process with --rounds 2 to see the second array on a warm heap (the first
// array is cancelled and its members removed between rounds).
//
// Usage: gpurent_array_bench [--tasks N] [--batch K] [--store PATH] [--rounds R]
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <time.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "controller/controller.h"
#include "model/codec.h"
#include "store/store.h"

namespace {

using namespace gpurent;
using controller::Controller;

constexpr int kGpusPerNode = 8;

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

[[noreturn]] void die(std::string_view what) {
  fmt::print(stderr, "array_bench: {}\n", what);
  std::exit(1);
}

// Runs `work`, prints its CPU time under `name`, returns what it returned.
template <class Work>
auto timed(std::string_view name, Work work) {
  const double before = thread_cpu_ms();
  auto result = work();
  fmt::print("  {:<8} {:8.1f} ms\n", name, thread_cpu_ms() - before);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  int tasks = 8'000;
  int batch = 50;
  int rounds = 1;
  std::string store_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--tasks") {
      tasks = std::atoi(argv[i + 1]);
    } else if (flag == "--batch") {
      batch = std::atoi(argv[i + 1]);
    } else if (flag == "--rounds") {
      rounds = std::atoi(argv[i + 1]);
    } else if (flag == "--store") {
      store_path = argv[i + 1];
    } else {
      die(fmt::format("unknown flag {}", flag));
    }
  }
  if (tasks < 1 || batch < 1 || rounds < 1) die("--tasks, --batch and --rounds must be positive");
  const int nodes = (tasks + kGpusPerNode - 1) / kGpusPerNode;
  spdlog::set_level(spdlog::level::warn);  // one line per registered node otherwise

  ManualClock clock(from_unix_ms(1'800'000'000'000));
  Controller ctl(clock, {.heartbeat_timeout = std::chrono::hours(24), .seed = 42});
  const auto admin =
      *ctl.authenticate(ctl.bootstrap_admin(hash_secret("admin"), "gpr_admin", 0)->secret_hash);
  if (!ctl.create_join_token(admin, "bench", std::chrono::hours(1), hash_secret("join"))) {
    die("join token");
  }
  auto tenant = ctl.create_tenant(admin, "bench");
  if (!tenant ||
      !ctl.create_api_key(admin,
                          {tenant->id, model::Role::kTenant, "bench", hash_secret("t"), ""}) ||
      !ctl.topup(admin, tenant->id, int64_t{1'000'000'000} * kMicrosPerUnit, "", std::nullopt)) {
    die("tenant");
  }
  const auto caller = *ctl.authenticate(hash_secret("t"));
  std::vector<std::string> node_ids;
  for (int n = 0; n < nodes; ++n) {
    model::NodeRegistration registration{.name = fmt::format("fleet-sim-{:05}", n),
                                         .cpu_count = 112,
                                         .memory_mb = 2048 * 1024,
                                         .simulated = true,
                                         .agent_version = "bench"};
    for (int g = 0; g < kGpusPerNode; ++g) {
      registration.gpus.push_back(
          {fmt::format("GPU-{:05}-{}", n, g), g, "h100-80g", "h100-80g", 81920});
    }
    auto registered = ctl.register_node(hash_secret("join"), registration, "c",
                                        hash_secret(fmt::format("c{}", n)));
    if (!registered) die(registered.error().message);
    node_ids.push_back(registered->node_id);
  }
  std::unique_ptr<store::Store> store;
  if (!store_path.empty()) {
    auto opened = store::open_sqlite_store(store_path);
    if (!opened) die(opened.error().message);
    store = std::move(*opened);
  }
  const auto commit = [&](const controller::ChangeSet& changes) {
    if (!store) return 0;
    if (auto committed = store->commit(changes); !committed) die(committed.error().message);
    return 0;
  };
  commit(ctl.take_changes_for_store());

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
    auto changes = timed("rows", [&] { return ctl.take_changes_for_store(); });
    timed("commit", [&] { return commit(changes); });
    const auto answers = timed("desired", [&] {
      size_t bytes = 0;
      for (const auto& node : node_ids) {
        auto desired = ctl.desired_state(node);
        if (!desired) die(desired.error().message);
        bytes += model::desired_state_json(*desired).size();
      }
      return bytes;
    });
    std::vector<controller::ChangeSet> batches;
    timed("reports", [&] {
      for (size_t n = 0; n < node_ids.size(); ++n) {
        const auto desired = ctl.desired_state(node_ids[n]);
        model::NodeReport report{desired->generation, {}};
        for (const auto& w : desired->workloads) {
          report.workloads.push_back(
              {w.instance_id, w.run, model::WorkloadPhase::kRunning, std::nullopt, ""});
        }
        if (!ctl.apply_report(node_ids[n], report)) die("report");
        if ((n + 1) % static_cast<size_t>(batch) == 0 || n + 1 == node_ids.size()) {
          batches.push_back(ctl.take_changes_for_store());
        }
      }
      return 0;
    });
    timed("commit", [&] {
      for (const auto& b : batches) commit(b);
      return 0;
    });
    const auto view = ctl.job(caller, job);
    int running = 0;
    for (const auto& task : (*view)->tasks) running += task.state == model::JobState::kRunning;
    fmt::print("  {} of {} tasks running; desired answers {:.1f} MB\n", running, tasks,
               static_cast<double>(answers) / 1e6);
    if (running != tasks) die("not every task runs");
    // Cancelled and gone before the next round.
    if (!ctl.cancel_job(caller, job)) die("cancel");
    for (const auto& node : node_ids) {
      const auto desired = ctl.desired_state(node);
      model::NodeReport report{desired->generation, {}};
      if (!ctl.apply_report(node, report)) die("report");
    }
    commit(ctl.take_changes_for_store());
  }
  return 0;
}
