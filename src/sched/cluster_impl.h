// The placement engine's state (Cluster::Impl) and its helpers, shared by cluster.cc (placement,
// allocation, the node index) and cluster_queries.cc (admission, statistics, invariants).
// Internal to src/sched.
#pragma once

#include <algorithm>
#include <boost/container/small_vector.hpp>
#include <cmath>
#include <limits>
#include <set>
#include <span>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sched/cluster.h"
#include "sched/scoring.h"

namespace gpurent::sched {

// Above this many distinct request shapes, the least recently used shape's ranking is dropped
// (and rebuilt if that shape comes back): each cached ranking costs work on every group change.
inline constexpr size_t kMaxCachedShapes = 512;

// Profile weights are rescaled to whole numbers summing to about this much. Fragmentation is then
// a sum of whole numbers (weight × milli) that a double holds exactly, so equal scores compare
// equal and ties fall to best fit rather than to rounding noise.
inline constexpr double kProfileWeightScale = 1'000'000;
// why_never_fits's remembered answers: request shapes are few (a workload has dozens), so a
// bound only guards against a caller that makes every request unique.
inline constexpr size_t kMaxRememberedShapes = 4096;
// A type's activation log (Impl::TypeIndex) holds at least this many entries before it may be
// cleared.
inline constexpr size_t kMinActivationLog = 1024;
// Free states whose fragmentation is remembered (Impl::fragmentation_by_state); beyond, the memo
// starts again.
inline constexpr size_t kMaxRememberedStates = 1 << 20;

inline bool label_match(const NodeSpec& node,
                        const std::map<std::string, std::string, std::less<>>& selector) {
  for (const auto& [key, value] : selector) {
    const auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  return true;
}

// The request's filters on a node's identity and labels (not on its capacity).
inline bool node_allowed(const NodeSpec& node, const Request& request) {
  return (request.node_id.empty() || request.node_id == node.id) &&
         label_match(node, request.node_selector);
}

inline bool type_acceptable(const Request& request, std::string_view gpu_type,
                            int64_t gpu_memory_mib) {
  if (request.per_node.gpu_count == 0) return true;
  if (gpu_memory_mib < request.min_gpu_memory_mib) return false;
  if (request.gpu_types.empty()) return true;
  return std::find(request.gpu_types.begin(), request.gpu_types.end(), gpu_type) !=
         request.gpu_types.end();
}

// GPUs per node held without a heap allocation where a key is built (HGX boards have 8).
inline constexpr size_t kInlineGpus = 16;

inline void append_int(std::string& out, int64_t value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// Identifies a demand in a GPU type's ranking cache: everything that decides how a group of that
// type scores for it. The acceptable types, minimum GPU memory, node selector and gang size only
// choose among the groups (and their members) the rankings give.
inline std::string demand_key(const NodeDemand& d) {
  std::string key;
  for (int64_t v : {int64_t{d.gpu_count}, int64_t{d.gpu_milli}, d.gpu_memory_mib, d.cpu_milli,
                    d.memory_mib, d.disk_gb}) {
    append_int(key, v);
  }
  return key;
}

struct Cluster::Impl {
  // why_never_fits's answers by request shape, while no node joins or changes.
  mutable std::unordered_map<std::string, std::optional<Refusal>> never_fits_by_shape;
  std::optional<Refusal> never_fits(const Request& request) const;

  struct NodeRecord {
    NodeSpec spec;
    std::vector<int> domain;  // NVLink domain per GPU position, renumbered 0..
    std::vector<int> used_milli;
    std::vector<bool> unavailable;  // per GPU position: out of service (set_gpu_available)
    int64_t cpu_used = 0;
    int64_t memory_used = 0;
    int64_t disk_used = 0;
    bool schedulable = true;
    int group = -1;
    int64_t whole_free_counted = 0;  // this node's share of whole_free_by_type while grouped
  };

  struct ById {
    const Impl* impl;
    bool operator()(NodeHandle a, NodeHandle b) const {
      return impl->nodes[a].spec.id < impl->nodes[b].spec.id;
    }
  };

  // Schedulable nodes whose free capacity has the same shape (see cluster.h).
  struct Group {
    std::string gpu_type;
    int64_t gpu_memory_mib = 0;
    std::set<NodeHandle, ById> members;
    int type_slot = 0;  // its position in types[gpu_type].groups
  };

  // A group's standing for one demand: scored or not yet, feasible or not, and how it ranks.
  struct RankSlot {
    enum class State : uint8_t { kUnscored, kInfeasible, kFeasible };
    State state = State::kUnscored;
    PlacementRank rank;
  };

  // For one demand and one GPU type: the standing of each group of the type (scored once per
  // group: a group's shape never changes), by type slot, and the feasible groups, best first. A
  // request that accepts several types walks their rankings merged (RankedGroups).
  //
  // Kept lazily, because nodes move between groups on every allocation and most of the groups
  // they pass through live shortly: a group that becomes non-empty is logged for its type
  // (TypeIndex::activated), and a ranking takes in what its type logged since it last looked only
  // when it is used (catch_up); a group that becomes empty stays in `ranked` until a walk passes
  // it, and the walk drops it.
  struct ShapeRanking {
    // Group a goes before group b (of this ranking or another of the same policy): the better
    // rank, then the lower group id.
    static bool before(const PlacementRank& ra, int a, const PlacementRank& rb, int b,
                       Policy policy) {
      if (PlacementRank::better(ra, rb, policy)) return true;
      if (PlacementRank::better(rb, ra, policy)) return false;
      return a < b;
    }
    struct Order {
      const ShapeRanking* ranking;
      bool operator()(int a, int b) const {
        return before(ranking->rank_of(a), a, ranking->rank_of(b), b, ranking->policy);
      }
    };
    const Impl* impl;
    NodeDemand demand;
    std::string gpu_type;
    Policy policy;
    std::vector<RankSlot> slots;  // by type slot
    std::set<int, Order> ranked{Order{this}};
    uint64_t epoch = 0;  // of its type's activation log when it last caught up
    size_t seen = 0;     // entries of that log it has taken in
    uint64_t last_used = 0;

    const PlacementRank& rank_of(int group_id) const {
      return slots[impl->groups[group_id].type_slot].rank;
    }
  };

  // A GPU type's groups, and the log of those that became non-empty (see ShapeRanking).
  struct TypeIndex {
    std::vector<int> groups;     // by type slot
    std::vector<int> activated;  // group ids, in the order they became non-empty
    uint64_t epoch = 0;          // bumped when the log is cleared: rankings then take in all
  };

  // The non-empty groups several rankings hold, best first, as one sequence (a k-way merge: a
  // request accepts a few GPU types). Drops the emptied groups it passes from their rankings.
  class RankedGroups {
   public:
    explicit RankedGroups(const std::vector<ShapeRanking*>& rankings) {
      for (auto* ranking : rankings) {
        if (!ranking->ranked.empty()) cursors_.push_back({ranking, ranking->ranked.begin()});
      }
    }
    // The next group and its rank; nullopt at the end.
    std::optional<std::pair<int, const PlacementRank*>> next() {
      Cursor* best = nullptr;
      for (auto& cursor : cursors_) {
        auto& ranked = cursor.ranking->ranked;
        const auto& groups = cursor.ranking->impl->groups;
        while (cursor.at != ranked.end() && groups[*cursor.at].members.empty()) {
          cursor.at = ranked.erase(cursor.at);
        }
        if (cursor.at == ranked.end()) continue;
        if (!best || ahead(cursor, *best)) best = &cursor;
      }
      if (!best) return std::nullopt;
      const int group_id = *best->at++;
      return std::pair(group_id, &best->ranking->rank_of(group_id));
    }

   private:
    struct Cursor {
      ShapeRanking* ranking;
      std::set<int, ShapeRanking::Order>::iterator at;
    };
    static bool ahead(const Cursor& a, const Cursor& b) {
      return ShapeRanking::before(a.ranking->rank_of(*a.at), *a.at, b.ranking->rank_of(*b.at),
                                  *b.at, a.ranking->policy);
    }
    std::vector<Cursor> cursors_;
  };

  Policy policy;
  std::vector<NodeRecord> nodes;
  std::unordered_map<std::string, NodeHandle> by_id;
  std::vector<ProfileEntry> profile;
  std::vector<int64_t> cpu_cuts;     // free CPU bucket edges (see set_profile)
  std::vector<int64_t> memory_cuts;  // likewise for memory
  std::vector<Group> groups;
  std::unordered_map<std::string, int> group_by_key;
  // Every GPU type a node has had ("" for CPU-only nodes).
  std::map<std::string, TypeIndex, std::less<>> types;
  // GPU type -> demand_key -> ranking; at most kMaxCachedShapes in all.
  std::map<std::string, std::unordered_map<std::string, std::unique_ptr<ShapeRanking>>, std::less<>>
      rankings;
  size_t ranking_count = 0;
  uint64_t use_clock = 0;
  // The profile-weighted fragmentation of a free capacity, by free state (state_key): it is
  // constant within a CPU/memory bucket (set_profile's cuts are where it can change), so each
  // state is computed once however many groups and demands meet it.
  mutable std::unordered_map<std::string, double> fragmentation_by_state;
  std::unordered_map<std::string, int64_t> whole_free_by_type;  // on schedulable nodes

  explicit Impl(Policy p) : policy(p) {}

  // The one place an unavailable GPU's capacity disappears: every score, shape key and count
  // reads free milli through here, so a masked GPU is never chosen and alike nodes stay alike.
  static int free_milli(const NodeRecord& node, size_t position) {
    return node.unavailable[position] ? 0 : kMilliPerGpu - node.used_milli[position];
  }
  static int64_t whole_free(const NodeRecord& node) {
    int64_t whole = 0;
    for (size_t i = 0; i < node.used_milli.size(); ++i)
      whole += free_milli(node, i) == kMilliPerGpu;
    return whole;
  }

  FreeCapacity free_capacity(NodeHandle handle) const {
    const auto& node = nodes[handle];
    FreeCapacity free;
    free.gpus.reserve(node.spec.gpus.size());
    for (size_t i = 0; i < node.spec.gpus.size(); ++i) {
      free.gpus.push_back({free_milli(node, i), static_cast<int>(i), node.domain[i],
                           node.spec.gpus[i].pcie_switch});
    }
    free.cpu_milli = node.spec.cpu_milli - node.cpu_used;
    free.memory_mib = node.spec.memory_mib - node.memory_used;
    free.disk_gb = node.spec.disk_gb - node.disk_used;
    free.tracks_disk = node.spec.disk_gb > 0;
    free.gpu_memory_mib = node.spec.gpu_memory_mib;
    free.gpu_type = node.spec.gpu_type;
    return free;
  }

  static int bucket(const std::vector<int64_t>& cuts, int64_t value) {
    return static_cast<int>(std::upper_bound(cuts.begin(), cuts.end(), value) - cuts.begin());
  }

  // What fragmentation() reads of a free capacity: the free milli of its GPUs (as a multiset),
  // its CPU and memory buckets, its free disk when tracked, its GPU memory and type.
  std::string state_key(const FreeCapacity& free) const {
    boost::container::small_vector<int, kInlineGpus> milli;
    for (const auto& gpu : free.gpus) milli.push_back(gpu.milli);
    std::sort(milli.begin(), milli.end());
    std::string key;
    for (int m : milli) append_int(key, m);
    append_int(key, -1);
    append_int(key, bucket(cpu_cuts, free.cpu_milli));
    append_int(key, bucket(memory_cuts, free.memory_mib));
    append_int(key, free.tracks_disk ? free.disk_gb : -1);
    append_int(key, free.gpu_memory_mib);
    key += free.gpu_type;
    return key;
  }

  double fragmentation_of(const FreeCapacity& free) const {
    if (fragmentation_by_state.size() >= kMaxRememberedStates) fragmentation_by_state.clear();
    auto [it, inserted] = fragmentation_by_state.try_emplace(state_key(free), 0.0);
    if (inserted) it->second = fragmentation(free, profile, policy);
    return it->second;
  }

  std::optional<NodeScore> score(const FreeCapacity& free, const NodeDemand& demand) {
    return score_node(free, demand, policy,
                      [this](const FreeCapacity& state) { return fragmentation_of(state); });
  }

  std::string group_key(NodeHandle handle) const {
    const auto& node = nodes[handle];
    std::string key;
    key.reserve(node.spec.gpu_type.size() + (2 * node.used_milli.size() + 8) * sizeof(int64_t));
    key = node.spec.gpu_type;
    key.push_back('\0');
    append_int(key, node.spec.gpu_memory_mib);
    // Free milli per NVLink domain, each sorted, domains sorted: alike nodes get one key
    // whatever their device numbering. Built without allocating: this runs for every placement.
    boost::container::small_vector<std::pair<int, int>, kInlineGpus> cells;  // (domain, milli)
    for (size_t i = 0; i < node.used_milli.size(); ++i) {
      cells.emplace_back(node.domain[i], free_milli(node, i));
    }
    std::sort(cells.begin(), cells.end());
    using Domain = std::span<const std::pair<int, int>>;
    boost::container::small_vector<Domain, kInlineGpus> domains;
    for (size_t start = 0, end = 0; start < cells.size(); start = end) {
      while (end < cells.size() && cells[end].first == cells[start].first) ++end;
      domains.emplace_back(cells.data() + start, end - start);
    }
    const auto milli = [](const std::pair<int, int>& cell) { return cell.second; };
    std::sort(domains.begin(), domains.end(), [&](const Domain& a, const Domain& b) {
      return std::ranges::lexicographical_compare(a, b, {}, milli, milli);
    });
    for (const auto& domain : domains) {
      for (const auto& cell : domain) append_int(key, cell.second);
      append_int(key, -1);
    }
    append_int(key, bucket(cpu_cuts, node.spec.cpu_milli - node.cpu_used));
    append_int(key, bucket(memory_cuts, node.spec.memory_mib - node.memory_used));
    append_int(key, node.spec.disk_gb > 0);
    return key;
  }

  void join_group(NodeHandle handle) {
    auto key = group_key(handle);
    auto [it, inserted] = group_by_key.emplace(std::move(key), static_cast<int>(groups.size()));
    if (inserted) {
      auto& of_type = types[nodes[handle].spec.gpu_type].groups;
      groups.push_back({nodes[handle].spec.gpu_type, nodes[handle].spec.gpu_memory_mib,
                        std::set<NodeHandle, ById>(ById{this}), static_cast<int>(of_type.size())});
      of_type.push_back(it->second);
    }
    auto& group = groups[it->second];
    const bool was_empty = group.members.empty();
    group.members.insert(handle);
    auto& node = nodes[handle];
    node.group = it->second;
    node.whole_free_counted = whole_free(node);
    whole_free_by_type[node.spec.gpu_type] += node.whole_free_counted;
    if (was_empty) {
      auto& index = types[group.gpu_type];
      // The log is bounded: past a few entries per group, rankings take in the whole type.
      if (index.activated.size() >= kMinActivationLog + 4 * index.groups.size()) {
        index.activated.clear();
        ++index.epoch;
      }
      index.activated.push_back(it->second);
    }
  }

  void leave_group(NodeHandle handle) {
    const int id = nodes[handle].group;
    if (id < 0) return;
    auto& group = groups[id];
    group.members.erase(handle);
    nodes[handle].group = -1;
    whole_free_by_type[nodes[handle].spec.gpu_type] -= nodes[handle].whole_free_counted;
  }

  void regroup(NodeHandle handle) {
    leave_group(handle);
    if (nodes[handle].schedulable) join_group(handle);
  }

  // Ranks a non-empty group for the ranking's demand, scoring it the first time.
  void add_to_ranking(ShapeRanking& ranking, int group_id) {
    const auto& group = groups[group_id];
    const auto position = static_cast<size_t>(group.type_slot);
    if (ranking.slots.size() <= position) ranking.slots.resize(position + 1);
    auto& slot = ranking.slots[position];
    if (slot.state == RankSlot::State::kUnscored) {
      const auto scored = score(free_capacity(*group.members.begin()), ranking.demand);
      slot.state = scored ? RankSlot::State::kFeasible : RankSlot::State::kInfeasible;
      if (scored) slot.rank = scored->rank;
    }
    if (slot.state == RankSlot::State::kFeasible) ranking.ranked.insert(group_id);
  }

  // Takes in the groups of its type that became non-empty since the ranking last looked (all
  // non-empty ones when the log was cleared since).
  void catch_up(ShapeRanking& ranking) {
    auto& index = types[ranking.gpu_type];
    const auto add_if_used = [&](int group_id) {
      if (!groups[group_id].members.empty()) add_to_ranking(ranking, group_id);
    };
    if (ranking.epoch != index.epoch) {
      for (int group_id : index.groups) add_if_used(group_id);
    } else {
      for (size_t i = ranking.seen; i < index.activated.size(); ++i) {
        add_if_used(index.activated[i]);
      }
    }
    ranking.epoch = index.epoch;
    ranking.seen = index.activated.size();
  }

  // Drops the least recently used ranking, across all types.
  void evict_a_ranking() {
    using OfType = std::unordered_map<std::string, std::unique_ptr<ShapeRanking>>;
    OfType* oldest_map = nullptr;
    OfType::iterator oldest;
    for (auto& [type, of_type] : rankings) {
      for (auto it = of_type.begin(); it != of_type.end(); ++it) {
        if (!oldest_map || it->second->last_used < oldest->second->last_used) {
          oldest_map = &of_type;
          oldest = it;
        }
      }
    }
    if (oldest_map) {
      oldest_map->erase(oldest);
      --ranking_count;
    }
  }

  ShapeRanking& ranking_for(const NodeDemand& demand, const std::string& gpu_type) {
    auto& of_type = rankings[gpu_type];
    auto key = demand_key(demand);
    auto it = of_type.find(key);
    if (it == of_type.end()) {
      if (ranking_count >= kMaxCachedShapes) evict_a_ranking();
      auto ranking = std::make_unique<ShapeRanking>();
      ranking->impl = this;
      ranking->demand = demand;
      ranking->gpu_type = gpu_type;
      ranking->policy = policy;
      // A new ranking takes in the whole type.
      ranking->epoch = types[gpu_type].epoch + 1;
      it = of_type.emplace(std::move(key), std::move(ranking)).first;
      ++ranking_count;
    }
    ShapeRanking& ranking = *it->second;
    ranking.last_used = ++use_clock;
    catch_up(ranking);
    return ranking;
  }

  // The rankings of every GPU type the request accepts (and nodes have): any type for CPU-only
  // work (it runs beside GPUs too) and for work that names none.
  std::vector<ShapeRanking*> rankings_for(const Request& request) {
    std::vector<ShapeRanking*> out;
    if (request.per_node.gpu_count == 0 || request.gpu_types.empty()) {
      for (const auto& [type, index] : types) out.push_back(&ranking_for(request.per_node, type));
    } else {
      for (const auto& type : request.gpu_types) {
        if (types.contains(type)) out.push_back(&ranking_for(request.per_node, type));
      }
    }
    return out;
  }

  // Whether a group's GPUs are big enough for the request (its types are the rankings' concern).
  bool memory_acceptable(const Request& request, int group_id) const {
    return request.per_node.gpu_count == 0 ||
           groups[group_id].gpu_memory_mib >= request.min_gpu_memory_mib;
  }

  // Whether a member can take the demand: exact host resources and labels (the group's shape
  // already guarantees the GPUs).
  bool member_fits(NodeHandle handle, const Request& request) const {
    const auto& node = nodes[handle];
    const auto& d = request.per_node;
    if (d.cpu_milli > node.spec.cpu_milli - node.cpu_used) return false;
    if (d.memory_mib > node.spec.memory_mib - node.memory_used) return false;
    if (node.spec.disk_gb > 0 && d.disk_gb > node.spec.disk_gb - node.disk_used) return false;
    return node_allowed(node.spec, request);
  }

  std::optional<NodeAssignment> assign(NodeHandle handle, const NodeDemand& demand) {
    auto scored = score(free_capacity(handle), demand);
    if (!scored) return std::nullopt;
    return NodeAssignment{handle,
                          std::move(scored->positions),
                          scored->gpu_milli,
                          demand.cpu_milli,
                          demand.memory_mib,
                          demand.disk_gb};
  }

  // Where a valid request goes now (Cluster::place); nullopt when nowhere. Never explains why:
  // that visits every node (explain()), and most refusals need no reason.
  // (Not const: scoring fills the caches.)
  std::optional<Assignment> place(const Request& request);
  std::optional<Assignment> place_on(NodeHandle node, const Request& request);

  std::optional<Assignment> place_one(const Request& request) {
    RankedGroups ranked(rankings_for(request));
    std::optional<NodeHandle> best;
    const PlacementRank* best_rank = nullptr;
    while (const auto next = ranked.next()) {
      const auto [group_id, rank] = *next;
      if (best_rank && !(*rank == *best_rank)) break;
      if (!memory_acceptable(request, group_id)) continue;
      // Equal scores across groups: the lowest node id wins, so the order groups were created
      // in never shows.
      for (NodeHandle member : groups[group_id].members) {
        if (best && !ById{this}(member, *best)) break;
        if (!member_fits(member, request)) continue;
        best = member;
        best_rank = rank;
        break;
      }
    }
    if (!best) return std::nullopt;
    auto node = assign(*best, request.per_node);
    if (!node) return std::nullopt;
    return Assignment{{std::move(*node)}};
  }

  std::optional<Assignment> place_gang(const Request& request) {
    RankedGroups ranked(rankings_for(request));
    std::map<std::string, std::vector<NodeHandle>, std::less<>> by_fabric;
    std::vector<NodeHandle> all;
    const auto wanted = static_cast<size_t>(request.nodes);
    std::optional<std::vector<NodeHandle>> chosen;
    while (const auto next = ranked.next()) {
      const int group_id = next->first;
      if (!memory_acceptable(request, group_id)) continue;
      for (NodeHandle member : groups[group_id].members) {
        if (!member_fits(member, request)) continue;
        all.push_back(member);
        const auto& fabric = nodes[member].spec.fabric_group;
        if (fabric.empty()) continue;
        auto& same_fabric = by_fabric[fabric];
        same_fabric.push_back(member);
        if (same_fabric.size() == wanted) {
          chosen = same_fabric;
          break;
        }
      }
      if (chosen) break;
    }
    if (!chosen) {
      if (all.size() < wanted) return std::nullopt;
      chosen.emplace(all.begin(), all.begin() + static_cast<ptrdiff_t>(wanted));
    }
    Assignment assignment;
    for (NodeHandle handle : *chosen) {
      auto node = assign(handle, request.per_node);
      if (!node) return std::nullopt;
      assignment.nodes.push_back(std::move(*node));
    }
    return assignment;
  }

  Status check_assignment(const NodeAssignment& part, bool releasing) const {
    if (part.node >= nodes.size()) return fail(Error::internal("assignment names no node"));
    const auto& node = nodes[part.node];
    const auto sign = releasing ? -1 : 1;
    for (size_t i = 0; i < part.gpus.size(); ++i) {
      const int position = part.gpus[i];
      if (position < 0 || position >= static_cast<int>(node.used_milli.size()) ||
          (i > 0 && part.gpus[i - 1] >= position)) {
        return fail(Error::internal(fmt::format("bad GPU positions for node {}", node.spec.id)));
      }
      const int used = node.used_milli[position] + sign * part.gpu_milli;
      if (used < 0 || used > kMilliPerGpu) {
        return fail(Error::conflict("gpu_not_free",
                                    fmt::format("GPU {} of node {} {}", position, node.spec.id,
                                                releasing ? "was not allocated" : "is not free")));
      }
    }
    const auto within = [&](int64_t used, int64_t amount, int64_t total) {
      const int64_t after = used + sign * amount;
      return after >= 0 && (releasing || after <= total);
    };
    if (!within(node.cpu_used, part.cpu_milli, node.spec.cpu_milli) ||
        !within(node.memory_used, part.memory_mib, node.spec.memory_mib) ||
        (node.spec.disk_gb > 0 && !within(node.disk_used, part.disk_gb, node.spec.disk_gb))) {
      return fail(Error::conflict("resources_not_free",
                                  fmt::format("CPU, memory or disk of node {} {}", node.spec.id,
                                              releasing ? "was not allocated" : "is not free")));
    }
    return {};
  }

  Status apply(const Assignment& assignment, bool releasing) {
    for (size_t i = 0; i < assignment.nodes.size(); ++i) {
      GPURENT_CHECK(check_assignment(assignment.nodes[i], releasing));
      for (size_t j = 0; j < i; ++j) {
        if (assignment.nodes[j].node == assignment.nodes[i].node) {
          return fail(Error::internal("an assignment names a node twice"));
        }
      }
    }
    const int sign = releasing ? -1 : 1;
    for (const auto& part : assignment.nodes) {
      auto& node = nodes[part.node];
      for (int position : part.gpus) node.used_milli[position] += sign * part.gpu_milli;
      node.cpu_used += sign * part.cpu_milli;
      node.memory_used += sign * part.memory_mib;
      if (node.spec.disk_gb > 0) node.disk_used += sign * part.disk_gb;
      regroup(part.node);
    }
    return {};
  }

  void rebuild_index() {
    rankings.clear();
    ranking_count = 0;
    fragmentation_by_state.clear();
    groups.clear();
    types.clear();
    group_by_key.clear();
    whole_free_by_type.clear();
    for (auto& node : nodes) node.group = -1;
    for (NodeHandle h = 0; h < nodes.size(); ++h) {
      if (nodes[h].schedulable) join_group(h);
    }
  }

  // The invariants of one node (bounds, and its place in the index): check_invariants' part.
  Status check_node(NodeHandle handle) const;

  // Whether the node could take the request if it were empty.
  bool fits_empty(NodeHandle handle, const Request& request) const {
    const auto& spec = nodes[handle].spec;
    if (!type_acceptable(request, spec.gpu_type, spec.gpu_memory_mib)) return false;
    if (!node_allowed(spec, request)) return false;
    FreeCapacity empty;
    for (size_t i = 0; i < spec.gpus.size(); ++i) {
      empty.gpus.push_back({kMilliPerGpu, static_cast<int>(i), nodes[handle].domain[i], 0});
    }
    empty.cpu_milli = spec.cpu_milli;
    empty.memory_mib = spec.memory_mib;
    empty.disk_gb = spec.disk_gb;
    empty.tracks_disk = spec.disk_gb > 0;
    empty.gpu_memory_mib = spec.gpu_memory_mib;
    return score_node(empty, request.per_node, Policy::kSpread, std::span<const ProfileEntry>())
        .has_value();
  }

  Refusal explain(const Request& request) const {
    Refusal refusal;
    const auto& d = request.per_node;
    int type_nodes = 0, pinned_nodes = 0, label_nodes = 0, gpu_nodes = 0, cpu_nodes = 0,
        memory_nodes = 0, fitting_nodes = 0;
    for (NodeHandle h = 0; h < nodes.size(); ++h) {
      const auto& node = nodes[h];
      if (!node.schedulable) continue;
      if (!type_acceptable(request, node.spec.gpu_type, node.spec.gpu_memory_mib)) continue;
      ++type_nodes;
      const int64_t whole = whole_free(node);
      refusal.free_gpus += whole;
      refusal.largest_free_on_one_node = std::max(refusal.largest_free_on_one_node, whole);
      if (!request.node_id.empty() && request.node_id != node.spec.id) continue;
      ++pinned_nodes;
      if (!label_match(node.spec, request.node_selector)) continue;
      ++label_nodes;
      auto free = free_capacity(h);
      free.cpu_milli = free.memory_mib = std::numeric_limits<int64_t>::max() / 2;
      free.tracks_disk = false;
      if (!score_node(free, d, policy, std::span<const ProfileEntry>())) continue;
      ++gpu_nodes;
      if (d.cpu_milli > node.spec.cpu_milli - node.cpu_used) continue;
      ++cpu_nodes;
      if (d.memory_mib > node.spec.memory_mib - node.memory_used) continue;
      ++memory_nodes;
      if (member_fits(h, request)) ++fitting_nodes;
    }
    const auto set = [&](std::string constraint, std::string message) {
      refusal.constraint = std::move(constraint);
      refusal.message = std::move(message);
    };
    const auto gpus_wanted = d.gpu_milli < kMilliPerGpu
                                 ? fmt::format("{} milli of a GPU", d.gpu_milli)
                                 : fmt::format("{} whole GPU(s)", d.gpu_count);
    if (type_nodes == 0) {
      set("gpu_type", "no schedulable node has GPUs of an acceptable type");
    } else if (pinned_nodes == 0) {
      set("node", fmt::format("node {} (where its volumes live) is not schedulable or has no GPUs "
                              "of an acceptable type",
                              request.node_id));
    } else if (label_nodes == 0) {
      std::string labels;
      for (const auto& [key, value] : request.node_selector) {
        labels += fmt::format("{}{}={}", labels.empty() ? "" : ", ", key, value);
      }
      set("node_selector", fmt::format("no schedulable node carries the labels {}", labels));
    } else if (gpu_nodes == 0) {
      set(d.gpu_milli < kMilliPerGpu ? "gpu_fraction" : "gpu_count",
          fmt::format("no node has {} free", gpus_wanted));
    } else if (cpu_nodes == 0) {
      set("cpu", "no node with the GPUs free has enough free CPU");
    } else if (memory_nodes == 0) {
      set("memory", "no node with the GPUs free has enough free memory");
    } else if (fitting_nodes == 0) {
      set("disk", "no node with the GPUs free has enough free disk");
    } else {
      set("nodes",
          fmt::format("{} node(s) can take a member, {} are needed", fitting_nodes, request.nodes));
    }
    return refusal;
  }
};

}  // namespace gpurent::sched
