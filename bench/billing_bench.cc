// One metering tick of the controller over N running workloads (default 100,000), single thread.
//
// Fleet: N / 8 nodes of 8x h100-80g; N one-GPU instances of 100 tenants, every fifth one spot
// (priced by the spot market), each asking for 8 cores, 64 GB and 100 GB of disk, with CPU,
// memory and disk prices set, and a price-book version that takes effect in the middle of each
// timed interval, so every run's interval is split in two segments. All instances run; every node
// reports before each tick (reports are untimed). Each timed tick is what the server's host does
// on the controller's thread one billing interval (60 s) after the last: Controller::tick() (it
// observes the spot market, meters every run, one ledger transfer each, and checks balances) and
// take_changes_for_store() (the ChangeSet it hands to the committer). Ticks repeat `--ticks` times
// (default 5); wall-clock and this thread's CPU time are printed per tick, with the ledger's sum
// (must be 0).
//
// With --store PATH every ChangeSet is also committed to a new SQLite store at PATH (setup
// untimed), and the commit of each tick's ChangeSet is timed apart: the committer thread's work.
//
// Usage: gpurent_billing_bench [--workloads N] [--ticks K] [--store PATH]
#include <fmt/format.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/random.h"
#include "controller/controller.h"
#include "store/store.h"

namespace {

using namespace gpurent;
using controller::Controller;

constexpr int kGpusPerNode = 8;
constexpr int kTenants = 100;

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

[[noreturn]] void die(std::string_view what) {
  fmt::print(stderr, "billing_bench: {}\n", what);
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  int workloads = 100'000;
  int ticks = 5;
  std::string store_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--workloads") {
      workloads = std::atoi(argv[i + 1]);
    } else if (flag == "--ticks") {
      ticks = std::atoi(argv[i + 1]);
    } else if (flag == "--store") {
      store_path = argv[i + 1];
    } else {
      die(fmt::format("unknown flag {}", flag));
    }
  }
  const int nodes = (workloads + kGpusPerNode - 1) / kGpusPerNode;

  ManualClock clock(from_unix_ms(1'800'000'000'000));
  // Nodes report before each tick; a long timeout keeps setup time from marking any down.
  Controller ctl(clock, {.heartbeat_timeout = std::chrono::hours(24), .seed = 42});
  const auto admin =
      *ctl.authenticate(ctl.bootstrap_admin(hash_secret("admin"), "gpr_admin", 0)->secret_hash);
  if (!ctl.create_join_token(admin, "bench", std::chrono::hours(1), hash_secret("join"))) {
    die("join token");
  }
  if (!ctl.set_prices(
          admin,
          {.cpu_per_core_hour = 36'000, .memory_per_gb_hour = 7'200, .disk_per_gb_hour = 360})) {
    die("prices");
  }
  std::vector<model::Principal> tenants;
  for (int t = 0; t < kTenants; ++t) {
    const std::string name = fmt::format("tenant-{}", t);
    auto tenant = ctl.create_tenant(admin, name);
    if (!tenant ||
        !ctl.create_api_key(admin,
                            {tenant->id, model::Role::kTenant, name, hash_secret(name), ""}) ||
        !ctl.topup(admin, tenant->id, int64_t{1'000'000'000} * kMicrosPerUnit, "", std::nullopt)) {
      die("tenant");
    }
    tenants.push_back(*ctl.authenticate(hash_secret(name)));
  }
  std::vector<std::string> node_ids;
  for (int n = 0; n < nodes; ++n) {
    model::NodeRegistration registration{.name = fmt::format("node-{:06}", n),
                                         .cpu_count = 112,
                                         .memory_mb = 2048 * 1024,
                                         .simulated = true,
                                         .agent_version = "bench"};
    for (int g = 0; g < kGpusPerNode; ++g) {
      registration.gpus.push_back(
          {fmt::format("GPU-{:06}-{}", n, g), g, "h100-80g", "h100-80g", 81920});
    }
    auto registered = ctl.register_node(hash_secret("join"), registration, "c",
                                        hash_secret(fmt::format("c{}", n)));
    if (!registered) die(registered.error().message);
    node_ids.push_back(registered->node_id);
  }
  for (int i = 0; i < workloads; ++i) {
    model::InstanceSpec spec;
    spec.gpu_types = {"h100-80g"};
    spec.cpu = 8;
    spec.memory_gb = 64;
    spec.disk_gb = 100;
    spec.command = {"sleep", "infinity"};
    if (i % 5 == 0) spec.pricing = model::PricingModel::kSpot;
    if (!ctl.create_instance(tenants[static_cast<size_t>(i % kTenants)], std::move(spec),
                             std::nullopt, "")) {
      die("launch");
    }
  }
  // Every node reports all its workloads running.
  const auto report_all = [&] {
    for (const auto& node : node_ids) {
      const auto desired = ctl.desired_state(node);
      model::NodeReport report{desired->generation, {}};
      for (const auto& w : desired->workloads) {
        report.workloads.push_back(
            {w.instance_id, w.run, model::WorkloadPhase::kRunning, std::nullopt, ""});
      }
      if (!ctl.apply_report(node, report)) die("report");
    }
  };
  std::unique_ptr<store::Store> store;
  if (!store_path.empty()) {
    auto opened = store::open_sqlite_store(store_path);
    if (!opened) die(opened.error().message);
    store = std::move(*opened);
  }
  // Setup's changes go to the store (when there is one) untimed.
  const auto commit = [&](const controller::ChangeSet& changes) {
    if (!store) return;
    if (auto committed = store->commit(changes); !committed) die(committed.error().message);
  };
  report_all();
  ctl.tick();  // the first: the market observes the fleet
  commit(ctl.take_changes_for_store());

  fmt::print("workloads={} nodes={} ticks={}\n", workloads, nodes, ticks);
  std::vector<double> wall_ms;
  for (int k = 0; k < ticks; ++k) {
    // A price change half-way through the interval about to be metered.
    if (!ctl.set_prices(admin, {.effective_at = clock.now() + Millis(30'000),
                                .gpu_per_hour = {{"h100-80g", 18'000'000 + (k + 1) * 1'000}}})) {
      die("price change");
    }
    clock.advance(Millis(60'000));
    report_all();
    commit(ctl.take_changes_for_store());
    const double cpu_before = thread_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    ctl.tick();
    const double cpu_tick = thread_cpu_seconds() - cpu_before;
    const auto changes = ctl.take_changes_for_store();
    const auto end = std::chrono::steady_clock::now();
    const double cpu = thread_cpu_seconds() - cpu_before;
    const double ms = std::chrono::duration<double, std::milli>(end - start).count();
    wall_ms.push_back(ms);
    const size_t transfers = changes.transfers.size() + changes.usage_charges.size();
    const size_t usage = changes.usage.size() + changes.metered_usage.size();
    fmt::print(
        "tick {}: wall {:.1f} ms, cpu {:.1f} ms (tick {:.1f}, take_changes {:.1f}), transfers {}, "
        "usage records {}, ledger sum {}\n",
        k + 1, ms, cpu * 1000, cpu_tick * 1000, (cpu - cpu_tick) * 1000, transfers, usage,
        ctl.ledger_total());
    if (transfers != static_cast<size_t>(workloads)) die("not every run was charged");
    if (store) {
      const double commit_cpu_before = thread_cpu_seconds();
      const auto commit_start = std::chrono::steady_clock::now();
      commit(changes);
      const auto commit_end = std::chrono::steady_clock::now();
      fmt::print("  store commit of the tick's ChangeSet: wall {:.1f} ms, cpu {:.1f} ms\n",
                 std::chrono::duration<double, std::milli>(commit_end - commit_start).count(),
                 (thread_cpu_seconds() - commit_cpu_before) * 1000);
    }
  }
  std::sort(wall_ms.begin(), wall_ms.end());
  fmt::print("median wall {:.1f} ms, min {:.1f} ms\n", wall_ms[wall_ms.size() / 2],
             wall_ms.front());
  return ctl.ledger_total() == 0 ? 0 : 1;
}
