#include "sched/cluster.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "sched/cluster_impl.h"

namespace gpurent::sched {

std::string_view to_string(Policy policy) {
  switch (policy) {
    case Policy::kSpread:
      return "spread";
    case Policy::kFgd:
      return "fgd";
    case Policy::kBinpack:
      break;
  }
  return "binpack";
}

bool parse_policy(std::string_view text, Policy* out) {
  if (text == "binpack") {
    *out = Policy::kBinpack;
  } else if (text == "spread") {
    *out = Policy::kSpread;
  } else if (text == "fgd") {
    *out = Policy::kFgd;
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

Cluster::Cluster(Policy policy) : impl_(std::make_unique<Impl>(policy)) {}
Cluster::~Cluster() = default;
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;

Policy Cluster::policy() const { return impl_->policy; }

Result<NodeHandle> Cluster::upsert_node(NodeSpec spec) {
  if (spec.id.empty()) return fail(Error::invalid("invalid_node", "a node needs an id"));
  // The same spec again (a node's every re-registration and runtime report syncs it): nothing
  // changes, and the remembered answers stay.
  if (const auto known = impl_->by_id.find(spec.id);
      known != impl_->by_id.end() && impl_->nodes[known->second].spec == spec) {
    return known->second;
  }
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

// The rankings and the fragmentation memo are caches: filling them does not change what the
// cluster is, so the const queries below may.
Result<Assignment> Cluster::place(const Request& request) const {
  GPURENT_CHECK(validate(request));
  if (auto placed = const_cast<Impl&>(*impl_).place(request)) return std::move(*placed);
  return fail(Error::unprocessable("insufficient_capacity", "no schedulable node can take it now"));
}

std::variant<Assignment, Refusal> Cluster::place_or_explain(const Request& request) const {
  if (auto valid = validate(request); !valid) {
    return Refusal{"request", 0, 0, valid.error().message};
  }
  if (auto placed = const_cast<Impl&>(*impl_).place(request)) return std::move(*placed);
  return impl_->explain(request);
}

std::optional<Assignment> Cluster::Impl::place(const Request& request) {
  if (request.node_id.empty()) return request.nodes > 1 ? place_gang(request) : place_one(request);
  // One candidate: no ranking to search.
  const auto node = by_id.find(request.node_id);
  if (node == by_id.end()) return std::nullopt;
  return place_on(node->second, request);
}

std::optional<Assignment> Cluster::place_on(NodeHandle node, const Request& request) const {
  if (!validate(request)) return std::nullopt;
  return const_cast<Impl&>(*impl_).place_on(node, request);
}

std::optional<Assignment> Cluster::Impl::place_on(NodeHandle node, const Request& request) {
  if (node >= nodes.size() || !nodes[node].schedulable || request.nodes != 1) return std::nullopt;
  const auto& spec = nodes[node].spec;
  if (!type_acceptable(request, spec.gpu_type, spec.gpu_memory_mib) ||
      !member_fits(node, request)) {
    return std::nullopt;
  }
  auto part = assign(node, request.per_node);
  if (!part) return std::nullopt;
  return Assignment{{std::move(*part)}};
}

std::optional<size_t> Cluster::fits_after_releasing(NodeHandle node, const Request& request,
                                                    std::span<const Assignment* const> held) const {
  const auto& impl = *impl_;
  if (!validate(request) || node >= impl.nodes.size() || !impl.nodes[node].schedulable ||
      request.nodes != 1) {
    return std::nullopt;
  }
  const auto& record = impl.nodes[node];
  if (!type_acceptable(request, record.spec.gpu_type, record.spec.gpu_memory_mib) ||
      !node_allowed(record.spec, request)) {
    return std::nullopt;
  }
  // The node's free capacity as each allocation is given back (a GPU out of service stays
  // unusable).
  FreeCapacity free = impl.free_capacity(node);
  for (size_t given_up = 0; given_up < held.size(); ++given_up) {
    for (const auto& part : held[given_up]->nodes) {
      if (part.node != node) continue;
      for (int position : part.gpus) {
        if (!record.unavailable[position]) free.gpus[position].milli += part.gpu_milli;
      }
      free.cpu_milli += part.cpu_milli;
      free.memory_mib += part.memory_mib;
      if (free.tracks_disk) free.disk_gb += part.disk_gb;
    }
    if (fits_node(free, request.per_node)) return given_up + 1;
  }
  return std::nullopt;
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
    impl.profile.push_back(entry);
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
                                             size_t max_shapes, Policy policy) {
  if (policy != Policy::kFgd) {
    std::vector<ProfileEntry> merged;
    std::map<NodeDemand, size_t> index;
    for (auto& entry : counted) {
      const auto [it, inserted] = index.try_emplace(entry.demand, merged.size());
      if (inserted) {
        entry.gpu_types.clear();
        merged.push_back(std::move(entry));
      } else {
        merged[it->second].weight += entry.weight;
      }
    }
    counted = std::move(merged);
  }
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

}  // namespace gpurent::sched
