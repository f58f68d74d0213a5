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

// Identifies a request for the per-shape ranking cache: everything that decides which groups it
// can use and how they score. The node selector and gang size only filter members.
inline std::string shape_key(const Request& request) {
  std::string key;
  auto types = request.gpu_types;
  std::sort(types.begin(), types.end());
  for (const auto& type : types) key.append(type).push_back('\0');
  key.push_back('\1');
  const auto& d = request.per_node;
  for (int64_t v : {request.min_gpu_memory_mib, int64_t{d.gpu_count}, int64_t{d.gpu_milli},
                    d.gpu_memory_mib, d.cpu_milli, d.memory_mib, d.disk_gb}) {
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

  // Schedulable nodes whose free capacity has one shape (see cluster.h).
  struct Group {
    std::string gpu_type;
    int64_t gpu_memory_mib = 0;
    std::set<NodeHandle, ById> members;
  };

  // For one request shape: each group's score (computed once per group: a group's shape never
  // changes) and the non-empty feasible groups, best first.
  struct ShapeRanking {
    struct Order {
      const ShapeRanking* ranking;
      bool operator()(int a, int b) const {
        const auto& sa = **ranking->scores[a];
        const auto& sb = **ranking->scores[b];
        if (NodeScore::better(sa, sb, ranking->policy)) return true;
        if (NodeScore::better(sb, sa, ranking->policy)) return false;
        return a < b;
      }
    };
    Request request;
    Policy policy;
    std::vector<std::optional<std::optional<NodeScore>>> scores;  // outer: computed yet?
    std::set<int, Order> ranked{Order{this}};
    uint64_t last_used = 0;
  };

  Policy policy;
  std::vector<NodeRecord> nodes;
  std::unordered_map<std::string, NodeHandle> by_id;
  std::vector<ProfileEntry> profile;
  std::vector<int64_t> cpu_cuts;     // free CPU bucket edges (see set_profile)
  std::vector<int64_t> memory_cuts;  // likewise for memory
  std::vector<Group> groups;
  std::unordered_map<std::string, int> group_by_key;
  std::unordered_map<std::string, std::unique_ptr<ShapeRanking>> rankings;
  uint64_t use_clock = 0;
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
    return free;
  }

  static int bucket(const std::vector<int64_t>& cuts, int64_t value) {
    return static_cast<int>(std::upper_bound(cuts.begin(), cuts.end(), value) - cuts.begin());
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
      groups.push_back({nodes[handle].spec.gpu_type, nodes[handle].spec.gpu_memory_mib,
                        std::set<NodeHandle, ById>(ById{this})});
    }
    auto& group = groups[it->second];
    const bool was_empty = group.members.empty();
    group.members.insert(handle);
    auto& node = nodes[handle];
    node.group = it->second;
    node.whole_free_counted = whole_free(node);
    whole_free_by_type[node.spec.gpu_type] += node.whole_free_counted;
    if (was_empty) {
      for (auto& [shape, ranking] : rankings) add_to_ranking(*ranking, it->second);
    }
  }

  void leave_group(NodeHandle handle) {
    const int id = nodes[handle].group;
    if (id < 0) return;
    auto& group = groups[id];
    group.members.erase(handle);
    nodes[handle].group = -1;
    whole_free_by_type[nodes[handle].spec.gpu_type] -= nodes[handle].whole_free_counted;
    if (group.members.empty()) {
      for (auto& [shape, ranking] : rankings) {
        // Only groups feasible for the shape are ranked (and the order reads their scores).
        const auto& scores = ranking->scores;
        if (static_cast<size_t>(id) < scores.size() && scores[id] && *scores[id]) {
          ranking->ranked.erase(id);
        }
      }
    }
  }

  void regroup(NodeHandle handle) {
    leave_group(handle);
    if (nodes[handle].schedulable) join_group(handle);
  }

  void add_to_ranking(ShapeRanking& ranking, int group_id) {
    if (ranking.scores.size() <= static_cast<size_t>(group_id)) ranking.scores.resize(group_id + 1);
    auto& slot = ranking.scores[group_id];
    const auto& group = groups[group_id];
    if (!slot) {
      if (!type_acceptable(ranking.request, group.gpu_type, group.gpu_memory_mib)) {
        slot.emplace(std::nullopt);
      } else {
        slot.emplace(score_node(free_capacity(*group.members.begin()), ranking.request.per_node,
                                policy, profile));
      }
    }
    if (*slot) ranking.ranked.insert(group_id);
  }

  ShapeRanking& ranking_for(const Request& request) {
    auto key = shape_key(request);
    auto it = rankings.find(key);
    if (it == rankings.end()) {
      if (rankings.size() >= kMaxCachedShapes) {
        auto oldest = std::min_element(rankings.begin(), rankings.end(), [](auto& a, auto& b) {
          return a.second->last_used < b.second->last_used;
        });
        rankings.erase(oldest);
      }
      auto ranking = std::make_unique<ShapeRanking>();
      ranking->request = request;
      ranking->policy = policy;
      for (size_t g = 0; g < groups.size(); ++g) {
        if (!groups[g].members.empty()) add_to_ranking(*ranking, static_cast<int>(g));
      }
      it = rankings.emplace(std::move(key), std::move(ranking)).first;
    }
    it->second->last_used = ++use_clock;
    return *it->second;
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

  std::optional<NodeAssignment> assign(NodeHandle handle, const NodeDemand& demand) const {
    auto score = score_node(free_capacity(handle), demand, policy, profile);
    if (!score) return std::nullopt;
    return NodeAssignment{handle,           std::move(score->positions), score->gpu_milli,
                          demand.cpu_milli, demand.memory_mib,           demand.disk_gb};
  }

  // Where a valid request goes now (Cluster::place); nullopt when nowhere. Never explains why:
  // that visits every node (explain()), and most refusals need no reason.
  std::optional<Assignment> place(const Request& request) const;
  std::optional<Assignment> place_on(NodeHandle node, const Request& request) const;

  std::optional<Assignment> place_one(const Request& request) {
    auto& ranking = ranking_for(request);
    std::optional<NodeHandle> best;
    const NodeScore* best_score = nullptr;
    for (int group_id : ranking.ranked) {
      const auto& score = **ranking.scores[group_id];
      if (best_score && !NodeScore::same(score, *best_score)) break;
      // Equal scores across groups: the lowest node id wins, so the order groups were created
      // in never shows.
      for (NodeHandle member : groups[group_id].members) {
        if (best && !ById{this}(member, *best)) break;
        if (!member_fits(member, request)) continue;
        best = member;
        best_score = &score;
        break;
      }
    }
    if (!best) return std::nullopt;
    auto node = assign(*best, request.per_node);
    if (!node) return std::nullopt;
    return Assignment{{std::move(*node)}};
  }

  std::optional<Assignment> place_gang(const Request& request) {
    auto& ranking = ranking_for(request);
    std::map<std::string, std::vector<NodeHandle>, std::less<>> by_fabric;
    std::vector<NodeHandle> all;
    const auto wanted = static_cast<size_t>(request.nodes);
    std::optional<std::vector<NodeHandle>> chosen;
    for (int group_id : ranking.ranked) {
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
    groups.clear();
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
    return score_node(empty, request.per_node, Policy::kSpread, {}).has_value();
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
      if (!score_node(free, d, policy, {})) continue;
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
