// Scoring one node for one request: which GPUs it would take there, and how much that placement
// would fragment the node (the FGD measure; see cluster.h). Pure functions over a snapshot of the
// node's free capacity; the Cluster applies them to a representative of each group of alike nodes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "sched/cluster.h"

namespace gpurent::sched {

struct FreeGpuSlot {
  int milli = 0;     // free milli of this GPU
  int position = 0;  // position in NodeSpec::gpus
  int domain = 0;    // NVLink domain, renumbered 0.. per node
  int pcie_switch = 0;
};

// A node's free capacity.
struct FreeCapacity {
  std::vector<FreeGpuSlot> gpus;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int64_t disk_gb = 0;
  int64_t gpu_memory_mib = 0;  // per GPU; 0: unknown
  bool tracks_disk = false;
  std::string_view gpu_type;  // the node's (its spec outlives the snapshot)
};

// How many copies of the demand the node's free CPU, memory and disk could hold (GPUs aside);
// int64 max when the demand asks for none of them.
int64_t host_copies(const FreeCapacity& node, const NodeDemand& demand);

// The free GPU milli on the node that a request of this demand could not use, or all of it when
// the demand does not fit the node's CPU/memory at all. CPU-only demands fragment nothing.
// Shared-tier demands (as in the FGD paper): the free milli of GPUs with less left than the
// demand takes. Whole-GPU demands: everything but the whole GPUs that copies of the demand could
// take, and the number of copies is bounded by host_copies() too. The paper counts the whole GPUs
// usable as soon as one copy fits beside them, which lets CPU-hungry work land on a node whose
// other GPUs it leaves without CPU; bounding by the copies moves such work to CPU-rich nodes
// (about 0.35 points of unallocated GPU % on the Alibaba trace, docs/simulate.md). Policy kFgd
// measures as the paper's simulator does: with gpu_count GPUs that have the share free and the
// CPU beside them (memory unread), the free milli of the GPUs with less than the share; otherwise
// all of it.
int64_t unusable_gpu_milli(const FreeCapacity& node, const NodeDemand& demand,
                           Policy policy = Policy::kBinpack);
// The profile-weighted fragmentation of the node (sum of weight × unusable milli; all its free
// milli for entries that do not accept the node's GPU type).
double fragmentation(const FreeCapacity& node, std::span<const ProfileEntry> profile,
                     Policy policy = Policy::kBinpack);

// The milli a demand takes from each of its GPUs on nodes with GPUs of this memory: a shared-tier
// demand that asks for GPU memory gets at least that memory's share of the GPU. nullopt: the
// demand needs GPU memory and the node's GPU memory is unknown or too small.
std::optional<int> effective_gpu_milli(const NodeDemand& demand, int64_t gpu_memory_mib);

// What orders placements on different nodes (a NodeScore less the GPUs it takes).
struct PlacementRank {
  bool one_domain = true;  // all in one NVLink domain (or fewer than two GPUs)
  double fragmentation_delta = 0;
  int64_t free_milli_after = 0;

  // Lower is better under the policy: one NVLink domain first, then (binpack) the smallest
  // growth of fragmentation and the fullest node, or (spread) the emptiest node.
  static bool better(const PlacementRank& a, const PlacementRank& b, Policy policy);
  bool operator==(const PlacementRank&) const = default;
};

struct NodeScore {
  std::vector<int> positions;  // GPUs taken, by position in NodeSpec::gpus, ascending
  int gpu_milli = 0;           // taken from each of them
  PlacementRank rank;

  static bool better(const NodeScore& a, const NodeScore& b, Policy policy) {
    return PlacementRank::better(a.rank, b.rank, policy);
  }
  static bool same(const NodeScore& a, const NodeScore& b) { return a.rank == b.rank; }
};

// Whether the demand fits the node (GPUs, CPU, memory, disk): exactly when score_node() gives a
// score, without scoring.
bool fits_node(const FreeCapacity& node, const NodeDemand& demand);

// The best GPUs for the demand on this node and what taking them costs; nullopt when the demand
// does not fit (GPUs, CPU, memory or disk).
std::optional<NodeScore> score_node(const FreeCapacity& node, const NodeDemand& demand,
                                    Policy policy, std::span<const ProfileEntry> profile);
// The same with the profile-weighted fragmentation of a free capacity given by `fragmentation_of`
// (fragmentation() over the profile, or a memo of it: the Cluster keeps one by free state).
using FragmentationOf = std::function<double(const FreeCapacity&)>;
std::optional<NodeScore> score_node(const FreeCapacity& node, const NodeDemand& demand,
                                    Policy policy, const FragmentationOf& fragmentation_of);

}  // namespace gpurent::sched
