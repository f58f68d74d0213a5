// The cluster as the scheduler sees it: every node's capacity and topology, what is allocated on
// it, and the placement engine that chooses where a request goes.
//
// Pure and deterministic: no I/O, no clock, no randomness. The same sequence of calls gives the
// same answers, so the controller, `gpurent simulate` and the benchmarks agree. Ties are always
// broken by node id.
//
// Placement (policy kBinpack, the default) minimises fragmentation the way the FGD paper (Weng et
// al., "Beware of Fragmentation", USENIX ATC '23) frames it: a node's free GPU capacity is
// fragmented for a kind of request when that request cannot use it (too little left on a GPU,
// too few whole GPUs, or not enough CPU/memory beside them for as many copies as the whole GPUs
// could take: see unusable_gpu_milli in scoring.h); fragmentation is weighted by how
// common each kind of request is (the workload profile). A request goes where the weighted
// fragmentation grows least, then where the fewest GPUs are left free (best fit), then to the
// lowest node id. Multi-GPU requests first prefer nodes that can give them GPUs in one NVLink
// domain, and within a node the domain that is already most used; gangs prefer one fabric group.
// kSpread does the opposite of packing: the node with the most free GPUs.
//
// Speed: nodes whose free capacity has the same shape (type, per-NVLink-domain free GPU
// fractions, and which profile requests their free CPU/memory can hold) score the same, so they
// are kept together in one group, ordered by id. Groups are ranked per demand and GPU type (kept
// lazily; cluster_impl.h); a decision walks the rankings of the request's types: its cost grows
// with the number of distinct demands and only logarithmically with the number of nodes, and a
// request that fits nowhere finds its rankings empty without visiting a node.
//
// Thread-safety: none; one owner.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"

namespace gpurent::sched {

inline constexpr int kMilliPerGpu = 1000;
inline constexpr int kMaxGpusPerNode = 16;

// kBinpack: least growth of fragmentation, then the fullest node (docs/scheduler.md). kSpread:
// the emptiest node. kFgd: kBinpack with the FGD paper's fragmentation measure as published (a
// node's whole GPUs usable by a request as soon as one copy fits beside them), the reference
// `gpurent simulate` compares with.
enum class Policy { kBinpack, kSpread, kFgd };
std::string_view to_string(Policy policy);
bool parse_policy(std::string_view text, Policy* out);

struct GpuDevice {
  int index = 0;          // the device index on its node
  int nvlink_domain = 0;  // GPUs with the same value are connected by NVLink/NVSwitch
  int pcie_switch = 0;    // tie-break: GPUs under one PCIe switch
  int numa_node = 0;
  bool operator==(const GpuDevice&) const = default;
};

struct NodeSpec {
  std::string id;              // unique
  std::string gpu_type;        // catalog slug; empty for a CPU-only node
  int64_t gpu_memory_mib = 0;  // per GPU
  std::vector<GpuDevice> gpus;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int64_t disk_gb = 0;       // 0: disk is not tracked on this node
  std::string fabric_group;  // nodes behind one InfiniBand switch; empty: none
  std::map<std::string, std::string, std::less<>> labels;  // region, zone, edge, ...
  bool operator==(const NodeSpec&) const = default;
};

// What one node must give a request.
struct NodeDemand {
  int gpu_count = 0;             // GPUs on the node (0: CPU only)
  int gpu_milli = kMilliPerGpu;  // of each GPU; below 1000 only with gpu_count == 1 (shared tier)
  int64_t gpu_memory_mib = 0;    // shared tier: GPU memory needed; raises gpu_milli to the
                                 // memory's share of the GPU on nodes with smaller GPUs
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int64_t disk_gb = 0;
  auto operator<=>(const NodeDemand&) const = default;
};

struct Request {
  std::vector<std::string> gpu_types;  // acceptable GPU types; empty: any type
  int64_t min_gpu_memory_mib = 0;      // "any GPU with at least this much memory"
  NodeDemand per_node;
  int nodes = 1;  // > 1: a gang on this many nodes, all or nothing
  std::map<std::string, std::string, std::less<>> node_selector;  // labels a node must carry
  // Non-empty: only this node will do (work whose node-local volume lives there); one node only.
  std::string node_id;
};

// Checks the shape of a request (counts in range, fractions only for single GPUs, ...).
Status validate(const Request& request);

using NodeHandle = uint32_t;

struct NodeAssignment {
  NodeHandle node = 0;
  std::vector<int> gpus;         // positions in the node's NodeSpec::gpus, ascending
  int gpu_milli = kMilliPerGpu;  // taken from each of those GPUs
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int64_t disk_gb = 0;
};

struct Assignment {
  std::vector<NodeAssignment> nodes;  // one per gang member, in rank order
};

// Why a request cannot be placed now, for people ("which constraint failed, how many GPUs are
// free").
struct Refusal {
  std::string constraint;  // "gpu_type", "gpu_count", "gpu_fraction", "cpu", "memory", "disk",
                           // "node_selector", "node" (the pinned node), "nodes"
  int64_t free_gpus = 0;   // whole free GPUs of the acceptable types on schedulable nodes
  int64_t largest_free_on_one_node = 0;
  std::string message;
};

// One kind of request and how often it comes, for fragmentation scoring.
struct ProfileEntry {
  NodeDemand demand;
  // The GPU types it accepts (empty: any): on nodes of other types all free GPU capacity is
  // unusable for it, as the FGD paper counts pods that pin GPU models.
  std::vector<std::string> gpu_types;
  double weight = 1;
};

// The profile share of request shapes that placement keeps room for: the FGD paper's "typical
// pods" cover 95 % of the workload's pods.
inline constexpr double kDefaultProfileCoverage = 0.95;

// A profile for `policy` from request shapes weighted by how often they were seen: the most
// common first until they cover `coverage` (0, 1] of the total weight, at most max_shapes of
// them (at least one when there is any). Ties keep the input order. Shapes that differ only in
// their GPU types are one (types dropped, the first one's place) unless the policy reads types
// (kFgd; see fragmentation() in scoring.h).
std::vector<ProfileEntry> most_common_shapes(std::vector<ProfileEntry> counted, double coverage,
                                             size_t max_shapes, Policy policy = Policy::kBinpack);

struct ClusterStats {
  int64_t nodes = 0;
  int64_t schedulable_nodes = 0;
  int64_t gpu_milli_total = 0;      // on schedulable nodes
  int64_t gpu_milli_allocated = 0;  // on schedulable nodes
  // Free GPU milli that the workload profile's requests cannot use (weighted by the profile,
  // as in the FGD paper's fragmentation measure).
  double gpu_milli_fragmented = 0;
};

class Cluster {
 public:
  explicit Cluster(Policy policy = Policy::kBinpack);
  ~Cluster();
  Cluster(Cluster&&) noexcept;
  Cluster& operator=(Cluster&&) noexcept;

  Policy policy() const;

  // --- Nodes ------------------------------------------------------------------------------
  // Adds a node (schedulable) or replaces the spec of a known one. Replacing fails if the
  // node's current allocations would not fit the new spec.
  Result<NodeHandle> upsert_node(NodeSpec spec);
  std::optional<NodeHandle> find(std::string_view node_id) const;
  const NodeSpec& spec(NodeHandle node) const;
  size_t node_count() const;
  // An unschedulable node (cordoned, down) keeps its allocations but gets nothing new.
  void set_schedulable(NodeHandle node, bool schedulable);
  bool schedulable(NodeHandle node) const;
  // A GPU out of service (quarantined after a fatal error): placement never chooses it, and it
  // counts as no free capacity everywhere (free_gpu_milli, the fragmentation score and the index
  // of alike nodes, free_whole_gpus, stats); what is already allocated on it stays until released.
  // Positions are in spec().gpus; the mask is kept across upsert_node while the node's GPU count
  // is unchanged, and cleared when it changes. kNotFound for a position the node lacks.
  Status set_gpu_available(NodeHandle node, int position, bool available);
  bool gpu_available(NodeHandle node, int position) const;
  // Free milli of each GPU of a node, by position in spec().gpus (0 on an unavailable GPU).
  std::vector<int> free_gpu_milli(NodeHandle node) const;
  struct HostResources {
    int64_t cpu_milli = 0;
    int64_t memory_mib = 0;
    int64_t disk_gb = 0;
  };
  HostResources free_resources(NodeHandle node) const;
  // Whole free GPUs of a type on schedulable nodes; O(1).
  int64_t free_whole_gpus(std::string_view gpu_type) const;

  // --- Placement --------------------------------------------------------------------------
  // Where the request would go now; changes nothing. A request that fits nowhere is an Error
  // "insufficient_capacity" without a reason: finding one visits every node.
  Result<Assignment> place(const Request& request) const;
  // Like place() but says why not, with counts, when the request cannot be placed: O(nodes) then.
  std::variant<Assignment, Refusal> place_or_explain(const Request& request) const;
  // Where on this one node a single-node request would go now, if it fits there.
  std::optional<Assignment> place_on(NodeHandle node, const Request& request) const;
  // How many of `held` (allocations with a part on the node), given up in order, let a
  // single-node request in on the node, as place_on() would find after release()ing them: the
  // fewest; nullopt when all of them are not enough. Changes nothing.
  std::optional<size_t> fits_after_releasing(NodeHandle node, const Request& request,
                                             std::span<const Assignment* const> held) const;
  // Why the request could not fit this cluster even if it were empty (every node schedulable,
  // every GPU available), naming the one rule it breaks; nullopt when it could. Something is
  // returned means waiting in a queue is pointless until nodes of another kind join. O(nodes) for
  // a request shape first seen since a node joined or changed, O(1) after (kept per shape).
  std::optional<Refusal> why_never_fits(const Request& request) const;
  // Takes the assignment's resources. Fails, changing nothing, if any part is not free.
  Status allocate(const Assignment& assignment);
  // Gives them back. Fails, changing nothing, if the assignment is not allocated.
  Status release(const Assignment& assignment);

  // --- Scoring ----------------------------------------------------------------------------
  // The kinds of requests to keep room for. Rebuilds the index: O(nodes). Empty: plain best fit.
  void set_profile(std::vector<ProfileEntry> profile);
  // The profile in use: weights rescaled to whole numbers (see cluster.cc).
  const std::vector<ProfileEntry>& profile() const;

  ClusterStats stats() const;
  // Verifies every internal invariant (no GPU above 1000 milli, free = total - allocated on
  // every dimension, each node in exactly the group its state says); fails loudly with what broke.
  Status check_invariants() const;
  // The same for the nodes of an assignment only (what allocating or releasing it changed): O(its
  // nodes) rather than O(nodes), for checking after every decision on a large cluster.
  Status check_invariants(const Assignment& touched) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpurent::sched
