// What the in-process controller benchmarks (billing_bench, array_bench) share: a controller's
// admin and join token, a fleet of simulated 8-GPU nodes registered straight with the controller
// (no agents, no HTTP), command-line flags, an optional store, a thread's CPU clock, and a way to
// stop.
#pragma once

#include <fmt/format.h>

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "controller/controller.h"
#include "store/store.h"

namespace gpurent::bench {

inline constexpr int kGpusPerNode = 8;

// Prints "NAME: what" to stderr and exits with status 1.
[[noreturn]] inline void die(std::string_view name, std::string_view what) {
  fmt::print(stderr, "{}: {}\n", name, what);
  std::exit(1);
}

// This thread's CPU time, in seconds.
inline double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// The process's resident set in MiB (/proc/self/statm): what a stage grew it by is memory the
// kernel had to fault in, which in a VM costs far more than the allocations themselves.
inline double resident_mib() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (!statm) return 0;
  long pages = 0, resident = 0;
  const int read = std::fscanf(statm, "%ld %ld", &pages, &resident);
  std::fclose(statm);
  return read == 2 ? static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
                         (1024.0 * 1024.0)
                   : 0;
}

// Page faults the process has taken so far (getrusage: minor faults).
inline long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// "--name value" pairs from the command line. Each benchmark asks for its flags with a default;
// check() stops it if a flag was given that it never asked for, or a value is missing.
class Flags {
 public:
  Flags(std::string_view program, int argc, char** argv) : program_(program) {
    for (int i = 1; i < argc; i += 2) {
      if (i + 1 == argc) die(program_, fmt::format("{} needs a value", argv[i]));
      given_.emplace(argv[i], argv[i + 1]);
    }
  }
  int integer(const std::string& name, int fallback) {
    const auto it = given_.find(name);
    if (it == given_.end()) return fallback;
    asked_.insert(name);
    return std::atoi(it->second.c_str());
  }
  std::string text(const std::string& name, std::string fallback) {
    const auto it = given_.find(name);
    if (it == given_.end()) return fallback;
    asked_.insert(name);
    return it->second;
  }
  void check() const {
    for (const auto& [name, value] : given_) {
      if (!asked_.contains(name)) die(program_, fmt::format("unknown flag {}", name));
    }
  }

 private:
  std::string program_;
  std::map<std::string, std::string> given_;
  std::set<std::string> asked_;
};

// The controller's first admin, with a join token whose secret is "join".
inline model::Principal admin_with_join_token(controller::Controller& ctl) {
  const auto admin = *ctl.accounts().credentials().authenticate(
      ctl.accounts().bootstrap_admin(hash_secret("admin"), "gpr_admin", 0)->secret_hash);
  if (!ctl.accounts().credentials().create_join_token(admin, "bench", std::chrono::hours(1),
                                                      hash_secret("join"))) {
    die("bench", "join token");
  }
  return admin;
}

// A tenant "bench" with a billion units of credit; its tenant principal (API key secret "t").
inline model::Principal funded_tenant(controller::Controller& ctl, const model::Principal& admin) {
  auto tenant = ctl.accounts().create_tenant(admin, "bench");
  if (!tenant ||
      !ctl.accounts().credentials().create_api_key(
          admin, {tenant->id, model::Role::kTenantAdmin, "bench", hash_secret("t"), ""}) ||
      !ctl.accounts().topup(admin, tenant->id, int64_t{1'000'000'000} * kMicrosPerUnit, "",
                            std::nullopt)) {
    die("bench", "tenant");
  }
  return *ctl.accounts().credentials().authenticate(hash_secret("t"));
}

// Every node reports all its desired workloads running.
inline void report_all_running(controller::Controller& ctl,
                               const std::vector<std::string>& node_ids) {
  for (const auto& node : node_ids) {
    const auto desired = ctl.fleet().desired_state(node);
    model::NodeReport report{desired->generation, {}};
    for (const auto& w : desired->workloads) {
      report.workloads.push_back(
          {w.instance_id, w.run, model::WorkloadPhase::kRunning, std::nullopt, ""});
    }
    if (!ctl.apply_report(node, report)) die("bench", "report");
  }
}

// `count` simulated nodes of kGpusPerNode h100-80g each (112 cores, 2 TiB), named node-000000...;
// their ids, in that order.
inline std::vector<std::string> register_nodes(controller::Controller& ctl, int count) {
  std::vector<std::string> ids;
  for (int n = 0; n < count; ++n) {
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
    if (!registered) die("bench", registered.error().message);
    ids.push_back(registered->node_id);
  }
  return ids;
}

// A controller on a manual clock, with its admin, a funded tenant (the caller) and `nodes`
// registered nodes; no node goes down while the clock moves on without heartbeats.
struct BenchFleet {
  explicit BenchFleet(int nodes)
      : clock(from_unix_ms(1'800'000'000'000)),
        ctl(clock, {.heartbeat_timeout = std::chrono::hours(24), .seed = 42}),
        admin(admin_with_join_token(ctl)),
        caller(funded_tenant(ctl, admin)),
        node_ids(register_nodes(ctl, nodes)) {}

  ManualClock clock;
  controller::Controller ctl;
  model::Principal admin;
  model::Principal caller;
  std::vector<std::string> node_ids;
};

// Where a benchmark's ChangeSets go with --store PATH: a new SQLite store there; without it,
// nowhere (commit() does nothing).
class OptionalStore {
 public:
  OptionalStore(std::string_view program, const std::string& path) : program_(program) {
    if (path.empty()) return;
    auto opened = store::is_postgres_url(path) ? store::open_postgres_store(path)
                                               : store::open_sqlite_store(path);
    if (!opened) die(program_, opened.error().message);
    store_ = std::move(*opened);
  }
  void commit(const controller::ChangeSet& changes) {
    if (!store_) return;
    if (auto committed = store_->commit(changes); !committed) {
      die(program_, committed.error().message);
    }
  }
  explicit operator bool() const { return store_ != nullptr; }

 private:
  std::string program_;
  std::unique_ptr<store::Store> store_;
};

}  // namespace gpurent::bench
