// Placement decisions per second of sched::Cluster, single thread, at several cluster sizes.
//
// Cluster: N nodes, each 8× h100-80g in one NVLink domain (NVSwitch, as on a DGX/HGX H100), 112
// cores and 2 TiB of memory (two 56-core CPUs).
// Requests: a seeded sequence of `--requests` (default 100,000) drawn from this mix, by count:
//   fractional 250 milli of one GPU, 2 cores, 16 GiB    20 %
//   fractional 500 milli of one GPU, 4 cores, 32 GiB    15 %
//   1 GPU, 12 cores, 192 GiB                            35 %
//   2 GPUs, 24 cores, 384 GiB                           15 %
//   4 GPUs, 48 cores, 768 GiB                           10 %
//   8 GPUs, 96 cores, 1536 GiB                           5 %
// The cluster's profile is that mix. Each request is one decision: place(), and allocate() when
// it fits. A round offers the requests in order until all are offered or the cluster is full
// (the smallest request of the mix is refused); refusals of larger requests before that are
// decisions too. Only the decision loop is timed, by wall clock and by this thread's CPU time.
// Rounds repeat on a fresh cluster until at least kMinRounds rounds and kMinSeconds of decisions
// have run; the figures are totals over all rounds. After each round the cluster's invariants are
// checked (untimed).
//
// Then the admission check every creation makes (Cluster::why_never_fits: could the request fit
// the cluster were it empty?): its first answer for each request shape of the mix on a fresh
// cluster (a walk over the nodes), and the answer again (kept per shape until a node joins).
//
// Usage: gpurent_sched_bench [--requests N] [--seed S] [NODES ...]   (default 1000 10000 100000)
// Prints one Markdown table row per size, for each of the two measurements.
#include <fmt/format.h>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "common/random.h"
#include "sched/cluster.h"

namespace {

using gpurent::sched::Cluster;
using gpurent::sched::NodeDemand;
using gpurent::sched::Request;
using Clock = std::chrono::steady_clock;

constexpr int kGpusPerNode = 8;
constexpr int64_t kGib = 1024;  // in MiB
constexpr int kMinRounds = 3;
constexpr double kMinSeconds = 0.5;

struct MixEntry {
  int percent;
  NodeDemand demand;
};

const std::vector<MixEntry>& mix() {
  static const std::vector<MixEntry> entries = {
      {20, {.gpu_count = 1, .gpu_milli = 250, .cpu_milli = 2000, .memory_mib = 16 * kGib}},
      {15, {.gpu_count = 1, .gpu_milli = 500, .cpu_milli = 4000, .memory_mib = 32 * kGib}},
      {35, {.gpu_count = 1, .cpu_milli = 12000, .memory_mib = 192 * kGib}},
      {15, {.gpu_count = 2, .cpu_milli = 24000, .memory_mib = 384 * kGib}},
      {10, {.gpu_count = 4, .cpu_milli = 48000, .memory_mib = 768 * kGib}},
      {5, {.gpu_count = 8, .cpu_milli = 96000, .memory_mib = 1536 * kGib}},
  };
  return entries;
}

// Index into mix() of each request.
std::vector<int> request_sequence(int count, uint64_t seed) {
  gpurent::Rng rng(seed);
  std::vector<int> sequence;
  sequence.reserve(count);
  for (int i = 0; i < count; ++i) {
    int draw = static_cast<int>(rng.uniform(100));
    int kind = 0;
    while (draw >= mix()[kind].percent) draw -= mix()[kind++].percent;
    sequence.push_back(kind);
  }
  return sequence;
}

gpurent::sched::NodeSpec node_spec(int i) {
  gpurent::sched::NodeSpec spec{.id = fmt::format("node-{:06}", i),
                                .gpu_type = "h100-80g",
                                .gpu_memory_mib = 80 * kGib,
                                .cpu_milli = 112'000,
                                .memory_mib = 2048 * kGib};
  for (int g = 0; g < kGpusPerNode; ++g) spec.gpus.push_back({.index = g});
  return spec;
}

// CPU time of this thread: on a shared machine it is what the decisions cost even when other
// processes take the cores (wall clock then overstates it).
double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Totals {
  int rounds = 0;
  int64_t decisions = 0;
  int64_t placed = 0;
  double decide_s = 0;
  double decide_cpu_s = 0;
  double setup_s = 0;        // adding nodes and setting the profile
  double allocated_pct = 0;  // at the end of the last round
};

// One round on a fresh cluster; adds to totals. Exits on a broken invariant.
void run_round(int nodes, const std::vector<int>& sequence, Totals* totals) {
  const auto setup_began = Clock::now();
  Cluster cluster;
  for (int i = 0; i < nodes; ++i) {
    if (!cluster.upsert_node(node_spec(i))) {
      std::fprintf(stderr, "upsert_node failed\n");
      std::exit(1);
    }
  }
  std::vector<gpurent::sched::ProfileEntry> profile;
  for (const MixEntry& entry : mix()) {
    profile.push_back({.demand = entry.demand, .weight = entry.percent / 100.0});
  }
  cluster.set_profile(profile);
  std::vector<Request> requests;
  for (const MixEntry& entry : mix()) requests.push_back({.per_node = entry.demand});
  const auto began = Clock::now();
  const double cpu_began = thread_cpu_s();

  int64_t decisions = 0;
  int64_t placed = 0;
  for (const int kind : sequence) {
    ++decisions;
    auto assignment = cluster.place(requests[kind]);
    if (!assignment) {
      if (kind == 0) break;  // the smallest request is refused: the cluster is full
      continue;
    }
    if (!cluster.allocate(*assignment)) {
      std::fprintf(stderr, "allocate refused what place chose\n");
      std::exit(1);
    }
    ++placed;
  }
  const auto ended = Clock::now();
  const double cpu_ended = thread_cpu_s();

  if (auto valid = cluster.check_invariants(); !valid) {
    std::fprintf(stderr, "invariant broken: %s\n", valid.error().message.c_str());
    std::exit(1);
  }
  const auto stats = cluster.stats();
  totals->rounds += 1;
  totals->decisions += decisions;
  totals->placed += placed;
  totals->decide_s += std::chrono::duration<double>(ended - began).count();
  totals->decide_cpu_s += cpu_ended - cpu_began;
  totals->setup_s += std::chrono::duration<double>(began - setup_began).count();
  totals->allocated_pct = 100.0 * static_cast<double>(stats.gpu_milli_allocated) /
                          static_cast<double>(stats.gpu_milli_total);
}

// The admission check's cost on a fresh cluster of `nodes` nodes: the first answer per shape
// (µs, the mean over the mix's shapes) and an answer kept from before (ns).
std::pair<double, double> admission_cost(int nodes) {
  Cluster cluster;
  for (int i = 0; i < nodes; ++i) {
    if (!cluster.upsert_node(node_spec(i))) std::exit(1);
  }
  std::vector<Request> requests;
  for (const MixEntry& entry : mix()) requests.push_back({.per_node = entry.demand});
  const auto first_began = Clock::now();
  for (const Request& request : requests) {
    if (cluster.why_never_fits(request)) std::exit(1);  // every shape fits an empty node
  }
  const double first_s = std::chrono::duration<double>(Clock::now() - first_began).count();
  constexpr int kAgain = 1'000'000;
  const auto again_began = Clock::now();
  int refused = 0;
  for (int i = 0; i < kAgain; ++i) {
    refused += cluster.why_never_fits(requests[static_cast<size_t>(i) % requests.size()]) ? 1 : 0;
  }
  const double again_s = std::chrono::duration<double>(Clock::now() - again_began).count();
  if (refused != 0) std::exit(1);
  return {first_s * 1e6 / static_cast<double>(requests.size()), again_s * 1e9 / kAgain};
}

}  // namespace

int main(int argc, char** argv) {
  int request_count = 100'000;
  uint64_t seed = 42;
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--requests" && i + 1 < argc) {
      request_count = std::atoi(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (!arg.empty() && arg[0] != '-' && std::atoi(argv[i]) > 0) {
      sizes.push_back(std::atoi(argv[i]));
    } else {
      std::fprintf(stderr, "usage: gpurent_sched_bench [--requests N] [--seed S] [NODES ...]\n");
      return 2;
    }
  }
  if (sizes.empty()) sizes = {1'000, 10'000, 100'000};
  const std::vector<int> sequence = request_sequence(request_count, seed);

  std::printf(
      "| nodes | GPUs | rounds | decisions/round | placed/round | GPU allocated at end | "
      "decisions/s | ns/decision | CPU ns/decision | setup/round (add nodes, set profile) |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const int nodes : sizes) {
    Totals totals;
    while (totals.rounds < kMinRounds || totals.decide_s < kMinSeconds) {
      run_round(nodes, sequence, &totals);
    }
    const auto decisions = static_cast<double>(totals.decisions);
    std::printf("| %d | %d | %d | %lld | %lld | %.1f %% | %.0f | %.0f | %.0f | %.0f ms |\n", nodes,
                nodes * kGpusPerNode, totals.rounds,
                static_cast<long long>(totals.decisions / totals.rounds),
                static_cast<long long>(totals.placed / totals.rounds), totals.allocated_pct,
                decisions / totals.decide_s, totals.decide_s * 1e9 / decisions,
                totals.decide_cpu_s * 1e9 / decisions, totals.setup_s * 1e3 / totals.rounds);
    std::fflush(stdout);
  }
  std::printf(
      "\n| nodes | admission check, first answer per shape | admission check, answer kept |\n"
      "| --- | --- | --- |\n");
  for (const int nodes : sizes) {
    const auto [first_us, again_ns] = admission_cost(nodes);
    std::printf("| %d | %.0f µs | %.0f ns |\n", nodes, first_us, again_ns);
    std::fflush(stdout);
  }
  return 0;
}
