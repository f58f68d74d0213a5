// Fill mode: the FGD paper's measure of a scheduler on a trace (Weng et al., USENIX ATC '23; the
// procedure is in the Alibaba trace's README, "How the paper replays it").
//
// No time and no departures. Every work item is offered once, then random duplicates (drawn with
// replacement) are added until the total GPU request reaches fill × the cluster's GPU capacity;
// with shuffle the whole sequence is shuffled. The items are then placed one by one (place, then
// allocate); one that does not fit counts as failed. Along the way the report records, as the
// arrived workload (GPU requests offered so far, placed or not) crosses each whole percent of
// capacity, the allocated and fragmented GPU %. The headline figure is
// unallocated_gpu_pct_at_100: 100 − allocated GPU % right after the item whose arrival brings
// the arrived workload to 100 %.
//
// Before placing, the cluster's workload profile is set from the input (not the duplicates): the
// distinct GPU request shapes, weighted by how often they occur, the most frequent first until
// they cover profile_coverage of the GPU items. CPU-only items are placed (they take CPU and
// memory) but are left out of the profile: they cannot use GPU capacity, so no free GPU is
// fragmented for them.
//
// Deterministic: the sequence depends only on the items, the capacity and the seed (splitmix64
// through common/random.h, with exact rejection sampling, so every platform draws the same).
// After every placement decision the cluster's invariants are checked: those of the nodes it
// changed, and of the whole cluster every kWholeClusterCheckEvery decisions and after the last. The
// first failure ends the run with an Error of code "invariant_violated" naming the item and the
// step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.h"
#include "sched/cluster.h"
#include "sim/inputs.h"
#include "sim/report.h"

namespace gpurent::sim {

// Bounds the sequence: at most kMaxFill × capacity of GPU requests is generated.
inline constexpr double kMaxFill = 10;
inline constexpr size_t kWholeClusterCheckEvery = 1024;

struct FillOptions {
  double fill = 1.3;  // in (0, kMaxFill]
  bool shuffle = false;
  uint64_t seed = 42;
  double profile_coverage = sched::kDefaultProfileCoverage;  // in (0, 1]
};

// The order in which items are offered, as indexes into `items`: all of them in input order, then
// the duplicates; shuffled as a whole when options.shuffle. No duplicates are added when the
// items already request fill × capacity, or request no GPUs at all.
std::vector<uint32_t> fill_sequence(std::span<const WorkItem> items, int64_t gpu_milli_capacity,
                                    const FillOptions& options);

// The profile described above; weights sum to 1. Ties in frequency are broken by the shape, so
// the result does not depend on the input order.
std::vector<sched::ProfileEntry> workload_profile(std::span<const WorkItem> items, double coverage,
                                                  sched::Policy policy = sched::Policy::kBinpack);

// Runs fill mode on a cluster that holds the nodes and nothing else (every node schedulable);
// the cluster is left as the run ends, so callers can inspect the placements.
Result<SimReport> run_fill(sched::Cluster& cluster, std::span<const WorkItem> items,
                           const FillOptions& options);

// A cluster holding these nodes, in order.
Result<sched::Cluster> make_cluster(std::span<const sched::NodeSpec> nodes, sched::Policy policy);

}  // namespace gpurent::sim
