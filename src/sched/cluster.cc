#include "sched/cluster.h"

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <span>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sched/scoring.h"

namespace gpurent::sched {
namespace {

// Above this many distinct request shapes, the least recently used shape's ranking is dropped
// (and rebuilt if that shape comes back): each cached ranking costs work on every group change.
constexpr size_t kMaxCachedShapes = 512;

// Profile weights are rescaled to whole numbers summing to about this much. Fragmentation is then
// a sum of whole numbers (weight × milli) that a double holds exactly, so equal scores compare
// equal and ties fall to best fit rather than to rounding noise.
constexpr double kProfileWeightScale = 1'000'000;
// why_never_fits's remembered answers: request shapes are few (a workload has dozens), so a
// bound only guards against a caller that makes every request unique.
constexpr size_t kMaxRememberedShapes = 4096;

bool label_match(const NodeSpec& node,
                 const std::map<std::string, std::string, std::less<>>& selector) {
  for (const auto& [key, value] : selector) {
    const auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  return true;
}

// The request's filters on a node's identity and labels (not on its capacity).
bool node_allowed(const NodeSpec& node, const Request& request) {
  return (request.node_id.empty() || request.node_id == node.id) &&
         label_match(node, request.node_selector);
}

bool type_acceptable(const Request& request, std::string_view gpu_type, int64_t gpu_memory_mib) {
  if (request.per_node.gpu_count == 0) return true;
  if (gpu_memory_mib < request.min_gpu_memory_mib) return false;
  if (request.gpu_types.empty()) return true;
  return std::find(request.gpu_types.begin(), request.gpu_types.end(), gpu_type) !=
         request.gpu_types.end();
}

// GPUs per node held without a heap allocation where a key is built (HGX boards have 8).
constexpr size_t kInlineGpus = 16;

void append_int(std::string& out, int64_t value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// Identifies a request for the per-shape ranking cache: everything that decides which groups it
// can use and how they score. The node selector and gang size only filter members.
std::string shape_key(const Request& request) {
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

}  // namespace

std::string_view to_string(Policy policy) {
  return policy == Policy::kSpread ? "spread" : "binpack";
}

bool parse_policy(std::string_view text, Policy* out) {
  if (text == "binpack") {
    *out = Policy::kBinpack;
  } else if (text == "spread") {
    *out = Policy::kSpread;
  } else {
    return false;
  }
  return true;
}

Status validate(const Request& request) {
  const auto& d = request.per_node;
  if (request.nodes < 1 || request.nodes > 4096) {
    return fail(Error::invalid("invalid_nodes", "nodes must be between 1 and 4096"));
  }
  if (d.gpu_count < 0 || d.gpu_count > kMaxGpusPerNode) {
    return fail(Error::invalid("invalid_gpu_count",
                               fmt::format("gpu_count must be between 0 and {}", kMaxGpusPerNode)));
  }
  if (d.gpu_milli < 1 || d.gpu_milli > kMilliPerGpu) {
    return fail(Error::invalid("invalid_gpu_milli", "gpu_milli must be between 1 and 1000"));
  }
  if (d.gpu_milli < kMilliPerGpu && d.gpu_count != 1) {
    return fail(Error::invalid("invalid_gpu_milli", "a GPU fraction needs gpu_count 1"));
  }
  if (d.gpu_memory_mib < 0 || d.cpu_milli < 0 || d.memory_mib < 0 || d.disk_gb < 0 ||
      request.min_gpu_memory_mib < 0) {
    return fail(Error::invalid("negative_resource", "resource amounts cannot be negative"));
  }
  if (request.nodes > 1 && d.gpu_milli < kMilliPerGpu) {
    return fail(Error::invalid("invalid_gpu_milli", "a multi-node request needs whole GPUs"));
  }
  if (request.nodes > 1 && !request.node_id.empty()) {
    return fail(Error::invalid("invalid_nodes", "a multi-node request cannot be pinned to a node"));
  }
  return {};
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

Cluster::Cluster(Policy policy) : impl_(std::make_unique<Impl>(policy)) {}
Cluster::~Cluster() = default;
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;

Policy Cluster::policy() const { return impl_->policy; }

Result<NodeHandle> Cluster::upsert_node(NodeSpec spec) {
  if (spec.id.empty()) return fail(Error::invalid("invalid_node", "a node needs an id"));
  impl_->never_fits_by_shape.clear();
  if (spec.gpus.size() > static_cast<size_t>(kMaxGpusPerNode)) {
    return fail(Error::invalid(
        "invalid_node", fmt::format("node {} has more than {} GPUs", spec.id, kMaxGpusPerNode)));
  }
  if (spec.cpu_milli < 0 || spec.memory_mib < 0 || spec.disk_gb < 0 || spec.gpu_memory_mib < 0) {
    return fail(
        Error::invalid("invalid_node", fmt::format("node {} has negative capacity", spec.id)));
  }
  std::map<int, int> domain_numbers;  // NVLink domain value -> 0..
  std::vector<int> domain;
  for (const auto& gpu : spec.gpus) {
    domain.push_back(
        domain_numbers.emplace(gpu.nvlink_domain, domain_numbers.size()).first->second);
  }
  auto& impl = *impl_;
  const auto found = impl.by_id.find(spec.id);
  if (found == impl.by_id.end()) {
    const auto handle = static_cast<NodeHandle>(impl.nodes.size());
    const auto gpu_count = spec.gpus.size();
    impl.nodes.push_back({std::move(spec), std::move(domain), std::vector<int>(gpu_count, 0),
                          std::vector<bool>(gpu_count, false)});
    impl.by_id.emplace(impl.nodes.back().spec.id, handle);
    impl.join_group(handle);
    return handle;
  }
  const NodeHandle handle = found->second;
  auto& node = impl.nodes[handle];
  const bool gpus_in_use = std::any_of(node.used_milli.begin(), node.used_milli.end(),
                                       [](int used) { return used > 0; });
  if ((gpus_in_use && spec.gpus.size() != node.spec.gpus.size()) ||
      node.cpu_used > spec.cpu_milli || node.memory_used > spec.memory_mib ||
      (spec.disk_gb > 0 && node.disk_used > spec.disk_gb)) {
    return fail(Error::conflict("node_in_use", fmt::format("node {} has allocations that the new "
                                                           "capacity cannot hold",
                                                           spec.id)));
  }
  impl.leave_group(handle);
  if (spec.gpus.size() != node.used_milli.size()) {
    node.used_milli.assign(spec.gpus.size(), 0);
    node.unavailable.assign(spec.gpus.size(), false);
  }
  node.spec = std::move(spec);
  node.domain = std::move(domain);
  impl.regroup(handle);
  return handle;
}

std::optional<NodeHandle> Cluster::find(std::string_view node_id) const {
  const auto it = impl_->by_id.find(std::string(node_id));
  if (it == impl_->by_id.end()) return std::nullopt;
  return it->second;
}

const NodeSpec& Cluster::spec(NodeHandle node) const { return impl_->nodes.at(node).spec; }
size_t Cluster::node_count() const { return impl_->nodes.size(); }

void Cluster::set_schedulable(NodeHandle node, bool schedulable) {
  auto& record = impl_->nodes.at(node);
  if (record.schedulable == schedulable) return;
  record.schedulable = schedulable;
  impl_->regroup(node);
}

bool Cluster::schedulable(NodeHandle node) const { return impl_->nodes.at(node).schedulable; }

Status Cluster::set_gpu_available(NodeHandle node, int position, bool available) {
  auto& record = impl_->nodes.at(node);
  if (position < 0 || position >= static_cast<int>(record.unavailable.size())) {
    return fail(Error::not_found("gpu", fmt::format("{} of node {}", position, record.spec.id)));
  }
  if (record.unavailable[position] == !available) return {};
  record.unavailable[position] = !available;
  impl_->regroup(node);  // the node's shape changed
  return {};
}

bool Cluster::gpu_available(NodeHandle node, int position) const {
  const auto& record = impl_->nodes.at(node);
  return position >= 0 && position < static_cast<int>(record.unavailable.size()) &&
         !record.unavailable[position];
}

std::vector<int> Cluster::free_gpu_milli(NodeHandle node) const {
  const auto& record = impl_->nodes.at(node);
  std::vector<int> free;
  for (size_t i = 0; i < record.used_milli.size(); ++i) free.push_back(Impl::free_milli(record, i));
  return free;
}

int64_t Cluster::free_whole_gpus(std::string_view gpu_type) const {
  const auto it = impl_->whole_free_by_type.find(std::string(gpu_type));
  return it == impl_->whole_free_by_type.end() ? 0 : it->second;
}

Cluster::HostResources Cluster::free_resources(NodeHandle node) const {
  const auto& record = impl_->nodes.at(node);
  return {record.spec.cpu_milli - record.cpu_used, record.spec.memory_mib - record.memory_used,
          record.spec.disk_gb - record.disk_used};
}

Result<Assignment> Cluster::place(const Request& request) const {
  auto placed = place_or_explain(request);
  if (auto* refusal = std::get_if<Refusal>(&placed)) {
    return fail(Error::unprocessable("insufficient_capacity", refusal->message));
  }
  return std::get<Assignment>(std::move(placed));
}

std::variant<Assignment, Refusal> Cluster::place_or_explain(const Request& request) const {
  if (auto valid = validate(request); !valid) {
    return Refusal{"request", 0, 0, valid.error().message};
  }
  // The rankings are a cache: filling it does not change what the cluster is.
  auto& impl = const_cast<Impl&>(*impl_);
  std::optional<Assignment> placed;
  if (!request.node_id.empty()) {
    // One candidate: no ranking to search.
    if (const auto node = find(request.node_id)) placed = place_on(*node, request);
  } else {
    placed = request.nodes > 1 ? impl.place_gang(request) : impl.place_one(request);
  }
  if (placed) return std::move(*placed);
  return impl.explain(request);
}

std::optional<Assignment> Cluster::place_on(NodeHandle node, const Request& request) const {
  const auto& impl = *impl_;
  if (node >= impl.nodes.size() || !impl.nodes[node].schedulable || request.nodes != 1 ||
      !validate(request)) {
    return std::nullopt;
  }
  const auto& spec = impl.nodes[node].spec;
  if (!type_acceptable(request, spec.gpu_type, spec.gpu_memory_mib) ||
      !impl.member_fits(node, request)) {
    return std::nullopt;
  }
  auto part = impl.assign(node, request.per_node);
  if (!part) return std::nullopt;
  return Assignment{{std::move(*part)}};
}

std::optional<Refusal> Cluster::why_never_fits(const Request& request) const {
  // Every creation asks, and the answer is O(nodes): it is kept per request shape until a node
  // joins or changes (upsert_node), the only change that can alter it.
  const auto& d = request.per_node;
  std::string shape =
      fmt::format("{}|{}|{},{},{},{},{},{}|{}|{}|", fmt::join(request.gpu_types, ","),
                  request.min_gpu_memory_mib, d.gpu_count, d.gpu_milli, d.gpu_memory_mib,
                  d.cpu_milli, d.memory_mib, d.disk_gb, request.nodes, request.node_id);
  for (const auto& [key, value] : request.node_selector) shape += key + "=" + value + ";";
  auto& known = impl_->never_fits_by_shape;
  if (const auto it = known.find(shape); it != known.end()) return it->second;
  auto answer = impl_->never_fits(request);
  if (known.size() >= kMaxRememberedShapes) known.clear();
  known.emplace(std::move(shape), answer);
  return answer;
}

std::optional<Refusal> Cluster::Impl::never_fits(const Request& request) const {
  const auto& impl = *this;
  const auto& d = request.per_node;
  int type_nodes = 0, pinned_nodes = 0, label_nodes = 0, fitting_nodes = 0;
  // The largest node of an acceptable type that the placement rules allow, resource by resource.
  int64_t most_gpus = 0, most_cpu = 0, most_memory = 0, most_disk = 0;
  bool some_disk_untracked = false;
  for (NodeHandle h = 0; h < impl.nodes.size(); ++h) {
    const auto& spec = impl.nodes[h].spec;
    if (!type_acceptable(request, spec.gpu_type, spec.gpu_memory_mib)) continue;
    ++type_nodes;
    if (!request.node_id.empty() && request.node_id != spec.id) continue;
    ++pinned_nodes;
    if (!label_match(spec, request.node_selector)) continue;
    ++label_nodes;
    most_gpus = std::max<int64_t>(most_gpus, static_cast<int64_t>(spec.gpus.size()));
    most_cpu = std::max(most_cpu, spec.cpu_milli);
    most_memory = std::max(most_memory, spec.memory_mib);
    most_disk = std::max(most_disk, spec.disk_gb);
    some_disk_untracked = some_disk_untracked || spec.disk_gb == 0;
    if (impl.fits_empty(h, request)) ++fitting_nodes;
  }
  if (fitting_nodes >= request.nodes) return std::nullopt;
  Refusal refusal;
  const auto set = [&](std::string constraint, std::string message) {
    refusal.constraint = std::move(constraint);
    refusal.message = std::move(message);
  };
  const std::string types = request.gpu_types.empty()
                                ? std::string("any type")
                                : fmt::format("{}", fmt::join(request.gpu_types, ", "));
  if (type_nodes == 0) {
    set("gpu_type", request.min_gpu_memory_mib > 0
                        ? fmt::format("no node has GPUs of {} with at least {} GiB of memory",
                                      types, request.min_gpu_memory_mib / 1024)
                        : fmt::format("no node has GPUs of {}", types));
  } else if (pinned_nodes == 0) {
    set("node", fmt::format("node {}, where its volumes live, is gone or has no GPUs of {}",
                            request.node_id, types));
  } else if (label_nodes == 0) {
    std::string labels;
    for (const auto& [key, value] : request.node_selector) {
      labels += fmt::format("{}{}={}", labels.empty() ? "" : ", ", key, value);
    }
    set("node_selector",
        fmt::format("no node with GPUs of {} carries the labels {}", types, labels));
  } else if (fitting_nodes > 0) {
    set("nodes", fmt::format("a gang of {} needs {} nodes that can each hold a member ({} GPU(s) "
                             "of {}); {} node(s) can",
                             request.nodes, request.nodes, d.gpu_count, types, fitting_nodes));
  } else if (d.gpu_count > most_gpus) {
    set("gpu_count", fmt::format("{} GPUs of {} on one node: the largest node has {}{}",
                                 d.gpu_count, types, most_gpus,
                                 most_gpus > 0 ? "; ask for fewer, or for several nodes (a job's "
                                                 "--nodes)"
                                               : ""));
  } else if (d.cpu_milli > most_cpu) {
    set("cpu", fmt::format("{} CPU cores on one node: the largest node has {}", d.cpu_milli / 1000,
                           most_cpu / 1000));
  } else if (d.memory_mib > most_memory) {
    set("memory", fmt::format("{} GiB of memory on one node: the largest node has {} GiB",
                              d.memory_mib / 1024, most_memory / 1024));
  } else if (!some_disk_untracked && d.disk_gb > most_disk) {
    set("disk",
        fmt::format("{} GB of disk on one node: the largest node has {} GB", d.disk_gb, most_disk));
  } else {
    set("gpu_memory",
        fmt::format("no node of {} could hold it even when empty: its GPUs have less memory than "
                    "the request's share needs",
                    types));
  }
  return refusal;
}

Status Cluster::allocate(const Assignment& assignment) { return impl_->apply(assignment, false); }
Status Cluster::release(const Assignment& assignment) { return impl_->apply(assignment, true); }

void Cluster::set_profile(std::vector<ProfileEntry> profile) {
  auto& impl = *impl_;
  double total = 0;
  for (const auto& entry : profile) total += std::max(entry.weight, 0.0);
  impl.profile.clear();
  for (auto& entry : profile) {
    if (entry.weight <= 0) continue;
    entry.weight = std::max(1.0, std::round(entry.weight / total * kProfileWeightScale));
    impl.profile.push_back(std::move(entry));
  }
  // The free CPU/memory at which some profile entry's unusable milli can change, before and
  // after taking one more request: k copies of a whole-GPU entry (host_copies()), and one of a
  // shared one, alone and beside any other entry.
  std::set<int64_t> cpu, memory;
  for (const auto& a : impl.profile) {
    const bool whole_gpus = a.demand.gpu_count > 0 && a.demand.gpu_milli >= kMilliPerGpu;
    const int max_copies = whole_gpus ? kMaxGpusPerNode / a.demand.gpu_count : 1;
    for (int64_t k = 1; k <= max_copies; ++k) {
      cpu.insert(k * a.demand.cpu_milli);
      memory.insert(k * a.demand.memory_mib);
      for (const auto& b : impl.profile) {
        cpu.insert(k * a.demand.cpu_milli + b.demand.cpu_milli);
        memory.insert(k * a.demand.memory_mib + b.demand.memory_mib);
      }
    }
  }
  impl.cpu_cuts.assign(cpu.begin(), cpu.end());
  impl.memory_cuts.assign(memory.begin(), memory.end());
  impl.rebuild_index();
}

const std::vector<ProfileEntry>& Cluster::profile() const { return impl_->profile; }

std::vector<ProfileEntry> most_common_shapes(std::vector<ProfileEntry> counted, double coverage,
                                             size_t max_shapes) {
  double total = 0;
  for (const auto& entry : counted) total += entry.weight;
  // Stable: equal counts keep the caller's order, so the result is deterministic.
  std::stable_sort(counted.begin(), counted.end(),
                   [](const auto& a, const auto& b) { return a.weight > b.weight; });
  double covered = 0;
  size_t kept = 0;
  while (kept < counted.size() && kept < max_shapes && (kept == 0 || covered < coverage * total)) {
    covered += counted[kept++].weight;
  }
  counted.resize(kept);
  return counted;
}

ClusterStats Cluster::stats() const {
  ClusterStats stats;
  double total_weight = 0;
  for (const auto& entry : impl_->profile) total_weight += entry.weight;
  for (NodeHandle h = 0; h < impl_->nodes.size(); ++h) {
    const auto& node = impl_->nodes[h];
    ++stats.nodes;
    if (!node.schedulable) continue;
    ++stats.schedulable_nodes;
    for (size_t i = 0; i < node.used_milli.size(); ++i) {
      // An unavailable GPU is no capacity; what still runs there is allocated all the same.
      if (!node.unavailable[i]) stats.gpu_milli_total += kMilliPerGpu;
      stats.gpu_milli_allocated += node.used_milli[i];
    }
    if (total_weight > 0) {
      stats.gpu_milli_fragmented += fragmentation(impl_->free_capacity(h), impl_->profile);
    }
  }
  if (total_weight > 0) stats.gpu_milli_fragmented /= total_weight;
  return stats;
}

Status Cluster::check_invariants() const {
  const auto& impl = *impl_;
  const auto broken = [](std::string what) {
    return fail(Error::internal("scheduler invariant broken: " + what));
  };
  size_t grouped = 0;
  for (const auto& group : impl.groups) grouped += group.members.size();
  size_t schedulable = 0;
  for (NodeHandle h = 0; h < impl.nodes.size(); ++h) {
    const auto& node = impl.nodes[h];
    if (node.unavailable.size() != node.used_milli.size()) {
      return broken(fmt::format("node {} has no availability mask for every GPU", node.spec.id));
    }
    for (size_t i = 0; i < node.used_milli.size(); ++i) {
      if (node.used_milli[i] < 0 || node.used_milli[i] > kMilliPerGpu) {
        return broken(fmt::format("GPU {} of node {} has {} milli allocated", i, node.spec.id,
                                  node.used_milli[i]));
      }
    }
    if (node.cpu_used < 0 || node.cpu_used > node.spec.cpu_milli || node.memory_used < 0 ||
        node.memory_used > node.spec.memory_mib || node.disk_used < 0 ||
        (node.spec.disk_gb > 0 && node.disk_used > node.spec.disk_gb)) {
      return broken(
          fmt::format("node {} has more CPU, memory or disk allocated than it has", node.spec.id));
    }
    if (!node.schedulable) {
      if (node.group >= 0)
        return broken(fmt::format("unschedulable node {} is indexed", node.spec.id));
      continue;
    }
    ++schedulable;
    if (node.group < 0 || !impl.groups[node.group].members.contains(h)) {
      return broken(fmt::format("node {} is missing from the index", node.spec.id));
    }
    const auto key = impl.group_by_key.find(impl.group_key(h));
    if (key == impl.group_by_key.end() || key->second != node.group) {
      return broken(fmt::format("node {} is indexed under a stale shape", node.spec.id));
    }
  }
  if (grouped != schedulable) {
    return broken(fmt::format("{} nodes indexed, {} schedulable", grouped, schedulable));
  }
  return {};
}

}  // namespace gpurent::sched
