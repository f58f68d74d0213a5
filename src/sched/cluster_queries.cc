// What the cluster says about requests it could never hold (admission), about itself
// (statistics), and the check of its invariants.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sched/cluster_impl.h"

namespace gpurent::sched {

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
  // Most requests fit somewhere: found without counting what a refusal would say.
  int fitting_nodes = 0;
  for (NodeHandle h = 0; h < impl.nodes.size() && fitting_nodes < request.nodes; ++h) {
    fitting_nodes += impl.fits_empty(h, request);
  }
  if (fitting_nodes >= request.nodes) return std::nullopt;
  fitting_nodes = 0;
  int type_nodes = 0, pinned_nodes = 0, label_nodes = 0;
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
      stats.gpu_milli_fragmented += impl_->fragmentation_of(impl_->free_capacity(h));
    }
  }
  if (total_weight > 0) stats.gpu_milli_fragmented /= total_weight;
  return stats;
}

namespace {

Status invariant_broken(const std::string& what) {
  return fail(Error::internal("scheduler invariant broken: " + what));
}

}  // namespace

Status Cluster::Impl::check_node(NodeHandle h) const {
  const auto& node = nodes[h];
  if (node.unavailable.size() != node.used_milli.size()) {
    return invariant_broken(
        fmt::format("node {} has no availability mask for every GPU", node.spec.id));
  }
  for (size_t i = 0; i < node.used_milli.size(); ++i) {
    if (node.used_milli[i] < 0 || node.used_milli[i] > kMilliPerGpu) {
      return invariant_broken(fmt::format("GPU {} of node {} has {} milli allocated", i,
                                          node.spec.id, node.used_milli[i]));
    }
  }
  if (node.cpu_used < 0 || node.cpu_used > node.spec.cpu_milli || node.memory_used < 0 ||
      node.memory_used > node.spec.memory_mib || node.disk_used < 0 ||
      (node.spec.disk_gb > 0 && node.disk_used > node.spec.disk_gb)) {
    return invariant_broken(
        fmt::format("node {} has more CPU, memory or disk allocated than it has", node.spec.id));
  }
  if (!node.schedulable) {
    if (node.group >= 0) {
      return invariant_broken(fmt::format("unschedulable node {} is indexed", node.spec.id));
    }
    return {};
  }
  if (node.group < 0 || !groups[node.group].members.contains(h)) {
    return invariant_broken(fmt::format("node {} is missing from the index", node.spec.id));
  }
  const auto key = group_by_key.find(group_key(h));
  if (key == group_by_key.end() || key->second != node.group) {
    return invariant_broken(fmt::format("node {} is indexed under a stale shape", node.spec.id));
  }
  return {};
}

Status Cluster::check_invariants() const {
  const auto& impl = *impl_;
  size_t grouped = 0;
  for (const auto& group : impl.groups) grouped += group.members.size();
  size_t schedulable = 0;
  for (NodeHandle h = 0; h < impl.nodes.size(); ++h) {
    GPURENT_CHECK(impl.check_node(h));
    schedulable += impl.nodes[h].schedulable;
  }
  if (grouped != schedulable) {
    return invariant_broken(fmt::format("{} nodes indexed, {} schedulable", grouped, schedulable));
  }
  return {};
}

Status Cluster::check_invariants(const Assignment& touched) const {
  for (const auto& part : touched.nodes) {
    if (part.node >= impl_->nodes.size()) return invariant_broken("an assignment names no node");
    GPURENT_CHECK(impl_->check_node(part.node));
  }
  return {};
}

}  // namespace gpurent::sched
