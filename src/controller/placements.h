// Placements: what each placed instance holds (its node, its GPUs, shared or whole, its share of
// its tenant's holdings), and the scheduler's view of the cluster (sched::Cluster) kept equal to
// it. An instance is placed from the moment the scheduler allocates it capacity until its run
// ends (Controller::end_run); restore() places again what the store says holds GPUs.
//
// Invariants: the cluster's allocations are exactly the recorded instances' assignments; a node
// lists exactly the instances recorded on it, and a GPU exactly the instances that hold it; a
// tenant's holding is the sum of its recorded instances'; a reserved instance counts its GPUs in
// its reservation's use (Reservations::count_use) while it is recorded; with_max_price() lists
// exactly the recorded spot instances with a max_price, and with_declared_runtime() counts the
// recorded instances with a max_runtime_s. check_invariants() holds
// them against the instances.
//
// Part of the Controller (controller.h), which decides where work goes (scheduling.cc); the
// scheduling pass allocates in cluster() first, then records the instance with add().
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/indexed_map.h"
#include "common/result.h"
#include "common/string_hash.h"
#include "controller/reservations.h"
#include "model/instance.h"
#include "sched/cluster.h"

namespace gpurent::controller {

// Entries the release log holds before its oldest are dropped.
inline constexpr size_t kMaxReleaseLog = size_t{1} << 16;

class Placements {
 public:
  // The instances on a node in id order, by address: the keys view the instances' own ids, and
  // the controller never erases an instance. What runs on a node is walked on every report and
  // every alert evaluation, where a lookup by id per instance cost a cache miss each.
  using PlacedInstances = std::map<std::string_view, model::Instance*>;
  // What a tenant holds now, for quotas and fair share.
  struct Holding {
    std::map<std::string, int64_t, std::less<>> milli_by_type;
    int64_t milli = 0;
    int instances = 0;
    int64_t milli_of_type(std::string_view gpu_type) const;
  };
  struct Context {
    Reservations& reservations;  // counts the GPUs reserved work uses
  };
  Placements(sched::Policy policy, Context context) : c_(context), cluster_(policy) {}
  Placements(const Placements&) = delete;
  Placements& operator=(const Placements&) = delete;

  // The scheduler's view: capacity, what is allocated, which nodes take work.
  sched::Cluster& cluster() { return cluster_; }
  const sched::Cluster& cluster() const { return cluster_; }

  // Records an instance the scheduler placed with `part` (allocated in cluster() already); the
  // instance's node_id, gpus, gpu_type and gpu_milli say what it holds.
  void add(model::Instance& instance, sched::NodeAssignment part);
  // At restore: allocates what the instance holds in the cluster, then add()s it.
  Status restore(model::Instance& instance, sched::Assignment assignment);
  // The instance's run ended: its allocation is released, and it leaves its node's, its GPUs' and
  // its tenant's holdings. False (and nothing done) for an instance not recorded.
  bool remove(const model::Instance& instance);

  // The instances placed on the node (empty if none).
  const PlacedInstances& on_node(std::string_view node_id) const;
  // Every node work was ever placed on, with what is placed there now (empty when its work
  // ended), in no order.
  const std::unordered_map<std::string, PlacedInstances, StringHash, std::equal_to<>>& by_node()
      const {
    return on_node_;
  }
  // The placed spot instances with a max_price, in id order: the work a rise of the spot price
  // may interrupt, without a walk over everything placed.
  const PlacedInstances& with_max_price() const { return with_max_price_; }
  // Changes with every add() and remove() on the node, and whenever work there is asked to stop
  // (stopping()): what runs there, and what of it may still be given up, is what it was while the
  // version is the same. 0 for a node nothing was placed on.
  uint64_t node_version(sched::NodeHandle node) const {
    return node < node_versions_.size() ? node_versions_[node] : 0;
  }
  // The recorded instance was asked to stop (it holds its capacity until its run ends).
  void stopping(const model::Instance& instance);
  // How many recorded instances declared a max_runtime_s: when none did, nothing placed ends at a
  // known time, and the backfill estimate needs no walk over the nodes.
  size_t with_declared_runtime() const { return with_declared_runtime_; }
  // The instances holding a GPU, in id order (several when it is shared; empty if none).
  const std::set<std::string>& holders(std::string_view gpu_uuid) const;
  // What the tenant holds (nothing held: zeros).
  const Holding& holding(std::string_view tenant_id) const;
  const std::unordered_map<std::string, Holding, StringHash, std::equal_to<>>& holdings() const {
    return held_;
  }
  // The nodes where capacity was released (each remove()), in order, as a log its readers follow
  // by position: a reader that looked at position p finds what was freed since in
  // released_since(p). Positions count every entry ever logged; the oldest are dropped once the
  // log holds kMaxReleaseLog, and released_since() is for positions from released_begin() on.
  uint64_t released_begin() const { return released_base_; }
  uint64_t released_end() const { return released_base_ + released_on_.size(); }
  std::span<const sched::NodeHandle> released_since(uint64_t position) const;
  // What a recorded instance was allocated.
  const sched::Assignment& assignment(std::string_view instance_id) const;
  size_t size() const { return assignments_.size(); }

  // The invariants above against the instances; fails with what broke. O(instances + nodes).
  Status check_invariants(const IndexedMap<model::Instance>& instances) const;

 private:
  // Adds (sign 1) or removes (-1) a placed instance from its tenant's holdings.
  void hold(const model::Instance& instance, int sign);

  Context c_;
  sched::Cluster cluster_;
  std::unordered_map<std::string, sched::Assignment, StringHash, std::equal_to<>> assignments_;
  std::unordered_map<std::string, PlacedInstances, StringHash, std::equal_to<>> on_node_;
  std::unordered_map<std::string, std::set<std::string>, StringHash, std::equal_to<>> holders_;
  std::unordered_map<std::string, Holding, StringHash, std::equal_to<>> held_;
  PlacedInstances with_max_price_;
  size_t with_declared_runtime_ = 0;
  // Gives the nodes of the instance's assignment a new version.
  void new_version(const sched::Assignment& assignment);

  std::vector<uint64_t> node_versions_;  // by node handle
  uint64_t changes_ = 0;                 // new versions given
  std::vector<sched::NodeHandle> released_on_;
  uint64_t released_base_ = 0;  // the position of released_on_[0]
};

}  // namespace gpurent::controller
