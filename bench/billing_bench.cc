// One metering tick of the controller over N running workloads (default 100,000), single thread.
//
// Fleet: N / 8 nodes of 8x h100-80g; N one-GPU instances of 100 tenants, every fifth one spot
// (priced by the spot market), each asking for 8 cores, 64 GB and 100 GB of disk, with CPU,
// memory and disk prices set, and a price-book version that takes effect in the middle of each
// timed interval, so every run's interval is split in two segments. All instances run; every node
// reports before each tick (reports are untimed). Each timed tick is what the server's host does
// on the controller's thread one billing interval (60 s) after the last: Controller::tick() (it
// observes the spot market, meters every run, one ledger transfer each, and checks balances) and
// take_changes(kStoreRows) (the ChangeSet it hands to the committer). Ticks repeat `--ticks` times
// (default 5); wall-clock and this thread's CPU time are printed per tick, with the ledger's sum
// (must be 0).
//
// With --store PATH every ChangeSet is also committed to a new SQLite store at PATH (setup
// untimed), and the commit of each tick's ChangeSet is timed apart: the committer thread's work.
//
// Usage: gpurent_billing_bench [--workloads N] [--ticks K] [--store PATH]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/random.h"
#include "controller/controller.h"
#include "controller_bench.h"
#include "store/store.h"

namespace {

using namespace gpurent;
using bench::kGpusPerNode;
using bench::thread_cpu_seconds;
using controller::Controller;

constexpr int kTenants = 100;

[[noreturn]] void die(std::string_view what) { bench::die("billing_bench", what); }

}  // namespace

int main(int argc, char** argv) {
  bench::Flags flags("billing_bench", argc, argv);
  const int workloads = flags.integer("--workloads", 100'000);
  const int ticks = flags.integer("--ticks", 5);
  const std::string store_path = flags.text("--store", "");
  flags.check();
  const int nodes = (workloads + kGpusPerNode - 1) / kGpusPerNode;

  ManualClock clock(from_unix_ms(1'800'000'000'000));
  // Nodes report before each tick; a long timeout keeps setup time from marking any down.
  Controller ctl(clock, {.heartbeat_timeout = std::chrono::hours(24), .seed = 42});
  const auto admin = bench::admin_with_join_token(ctl);
  if (!ctl.set_prices(
          admin,
          {.cpu_per_core_hour = 36'000, .memory_per_gb_hour = 7'200, .disk_per_gb_hour = 360})) {
    die("prices");
  }
  std::vector<model::Principal> tenants;
  for (int t = 0; t < kTenants; ++t) {
    const std::string name = fmt::format("tenant-{}", t);
    auto tenant = ctl.accounts().create_tenant(admin, name);
    if (!tenant ||
        !ctl.accounts().credentials().create_api_key(
            admin, {tenant->id, model::Role::kTenantAdmin, name, hash_secret(name), ""}) ||
        !ctl.accounts().topup(admin, tenant->id, int64_t{1'000'000'000} * kMicrosPerUnit, "",
                              std::nullopt)) {
      die("tenant");
    }
    tenants.push_back(*ctl.accounts().credentials().authenticate(hash_secret(name)));
  }
  const std::vector<std::string> node_ids = bench::register_nodes(ctl, nodes);
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
  // Setup's changes go to the store (when there is one) untimed.
  bench::OptionalStore store("billing_bench", store_path);
  const auto commit = [&](const controller::ChangeSet& changes) { store.commit(changes); };
  bench::report_all_running(ctl, node_ids);
  ctl.tick();  // the first: the market observes the fleet
  commit(ctl.take_changes(controller::Controller::Form::kStoreRows));

  fmt::print("workloads={} nodes={} ticks={}\n", workloads, nodes, ticks);
  std::vector<double> wall_ms;
  for (int k = 0; k < ticks; ++k) {
    // A price change half-way through the interval about to be metered.
    if (!ctl.set_prices(admin, {.effective_at = clock.now() + Millis(30'000),
                                .gpu_per_hour = {{"h100-80g", 18'000'000 + (k + 1) * 1'000}}})) {
      die("price change");
    }
    clock.advance(Millis(60'000));
    bench::report_all_running(ctl, node_ids);
    commit(ctl.take_changes(controller::Controller::Form::kStoreRows));
    const double cpu_before = thread_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    ctl.tick();
    const double cpu_tick = thread_cpu_seconds() - cpu_before;
    const auto changes = ctl.take_changes(controller::Controller::Form::kStoreRows);
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
        ctl.accounts().ledger_total());
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
  return ctl.accounts().ledger_total() == 0 ? 0 : 1;
}
