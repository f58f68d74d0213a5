// Helpers shared by the controller's translation units (controller.cc, nodes.cc, jobs.cc, ...).
// Not part of the controller's interface.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/assert.h"
#include "common/result.h"
#include "common/suggest.h"
#include "controller/idempotency.h"
#include "model/instance.h"
#include "model/node.h"
#include "model/tenant.h"
#include "sched/cluster.h"

namespace gpurent::controller::detail {

using model::Node;
using model::Principal;

inline Error forbidden(std::string_view what) {
  return {ErrorKind::kPermissionDenied, "forbidden", fmt::format("only operators may {}", what)};
}

inline bool visible_to(const Principal& caller, std::string_view tenant_id) {
  return caller.is_operator() || caller.tenant_id == tenant_id;
}

constexpr int64_t kMibPerGib = 1024;

// What an Idempotency-Key retry of a creation answers: the first request's object, found in
// `objects` by the id the key remembers and marked replayed; nullopt when the request is no retry
// (no key, or a new one); 409 idempotency_key_reused when the key came with another body or made
// another kind of object.
template <class Created, class Map>
Result<std::optional<Created>> replayed_creation(const IdempotencyKeys& keys,
                                                 const Principal& caller,
                                                 const std::optional<std::string>& key,
                                                 std::string_view fingerprint, const Map& objects) {
  GPURENT_TRY(replayed, keys.replayed_object(caller.tenant_id, key, fingerprint));
  if (!replayed) return std::optional<Created>();
  const auto it = objects.find(*replayed);
  if (it == objects.end()) {
    return fail(Error::conflict("idempotency_key_reused",
                                "this Idempotency-Key was used for another kind of request"));
  }
  return std::optional<Created>(Created{it->second, true});
}

// The objects an index lists under `key` (their ids, in the index's order), from `objects`.
template <class Index, class Objects>
std::vector<const typename Objects::mapped_type*> listed_under(const Index& index,
                                                               std::string_view key,
                                                               const Objects& objects) {
  std::vector<const typename Objects::mapped_type*> out;
  const auto it = index.find(std::string(key));
  if (it == index.end()) return out;
  out.reserve(it->second.size());
  for (const auto& id : it->second) out.push_back(&objects.at(id));
  return out;
}

// An object a tenant may name: its id and the name the tenant gave it.
struct NamedObject {
  std::string_view id;
  std::string_view name;
};

// The object a tenant means by `given`, which is not one of its ids: the only one of
// `candidates` (the tenant's live objects of `kind`, creation order) with that name. Names are not
// unique: several are refused (409 ambiguous_name) with their ids; none is 404 with the ids and
// names closest to what was given. O(candidates): only lookups that fail by id pay it.
template <class T>
Result<const T*> find_by_name(std::string_view kind, std::string_view given,
                              const std::vector<std::pair<const T*, NamedObject>>& candidates) {
  std::vector<const std::pair<const T*, NamedObject>*> named;
  for (const auto& candidate : candidates) {
    if (candidate.second.name == given) named.push_back(&candidate);
  }
  if (named.size() == 1) return named.front()->first;
  if (named.empty()) {
    std::vector<std::string_view> known;
    for (const auto& [object, names] : candidates) {
      known.push_back(names.id);
      if (names.name != names.id && !names.name.empty()) known.push_back(names.name);
    }
    constexpr size_t kMaxEdits = 2;
    Error missing = Error::not_found(kind, given);
    missing.message += did_you_mean(closest_names(given, known, kMaxEdits));
    return fail(std::move(missing));
  }
  std::vector<std::string_view> ids;
  for (const auto* candidate : named) ids.push_back(candidate->second.id);
  return fail(Error::conflict(
      "ambiguous_name", fmt::format("{} {}s are named '{}' ({}): give an id", named.size(), kind,
                                    given, fmt::join(ids, ", "))));
}

// Whether the GPU is named by the benchmark the node is asked for (it takes no work meanwhile).
inline bool being_measured(const Node& node, std::string_view gpu_uuid) {
  return node.benchmark &&
         std::ranges::find(node.benchmark->gpus, gpu_uuid) != node.benchmark->gpus.end();
}

// A node's GPUs in device-index order: the scheduler names GPUs by position in this order.
inline std::vector<const model::Gpu*> gpus_by_index(const Node& node) {
  std::vector<const model::Gpu*> gpus;
  for (const auto& gpu : node.gpus) gpus.push_back(&gpu);
  std::sort(gpus.begin(), gpus.end(),
            [](const model::Gpu* a, const model::Gpu* b) { return a->index < b->index; });
  return gpus;
}

// Labels under this prefix are the platform's, derived from what a node reported (agents may not
// set them): the scheduler matches capabilities the way it matches an operator's labels.
inline constexpr std::string_view kPlatformLabelPrefix = "gpurent.io/";
inline constexpr std::string_view kContainerRuntimeLabel = "gpurent.io/container-runtime";
// Nodes that run VMs and can give them their GPUs (model::runs_vm_work).
inline constexpr std::string_view kVmRuntimeLabel = "gpurent.io/vm-runtime";

// An image without a process form runs only where there is a container engine.
inline bool needs_container_runtime(const model::InstanceSpec& spec) {
  return !spec.image.empty() && spec.process_command.empty();
}

inline sched::NodeSpec node_spec(const Node& node) {
  sched::NodeSpec spec;
  spec.id = node.id;
  const auto gpus = gpus_by_index(node);
  if (!gpus.empty()) {
    spec.gpu_type = gpus.front()->type;
    spec.gpu_memory_mib = gpus.front()->memory_mb;
  }
  for (const auto* gpu : gpus) {
    spec.gpu_memory_mib = std::min(spec.gpu_memory_mib, gpu->memory_mb);
    // An unknown NVLink domain (-1) makes each GPU its own domain.
    spec.gpus.push_back({gpu->index,
                         gpu->nvlink_domain >= 0 ? gpu->nvlink_domain : 1000 + gpu->index,
                         gpu->pcie_switch, gpu->numa_node});
  }
  spec.cpu_milli = int64_t{node.cpu_count} * 1000;
  spec.memory_mib = node.memory_mb;
  spec.disk_gb = node.disk_gb;
  spec.fabric_group = node.fabric_group;
  spec.labels.insert(node.labels.begin(), node.labels.end());
  if (node.container_runtime) spec.labels.emplace(kContainerRuntimeLabel, "true");
  if (model::runs_vm_work(node.vm)) spec.labels.emplace(kVmRuntimeLabel, "true");
  return spec;
}

inline sched::Request scheduling_request(const model::InstanceSpec& spec) {
  sched::Request request;
  request.gpu_types = spec.gpu_types;
  request.min_gpu_memory_mib = int64_t{spec.min_gpu_memory_gb} * kMibPerGib;
  request.per_node = {.gpu_count = spec.gpu_count,
                      .gpu_milli = spec.gpu_milli,
                      .gpu_memory_mib = int64_t{spec.gpu_memory_gb} * kMibPerGib,
                      .cpu_milli = int64_t{spec.cpu} * 1000,
                      .memory_mib = int64_t{spec.memory_gb} * kMibPerGib,
                      .disk_gb = spec.disk_gb};
  request.node_selector.insert(spec.node_selector.begin(), spec.node_selector.end());
  if (needs_container_runtime(spec)) request.node_selector.emplace(kContainerRuntimeLabel, "true");
  if (spec.vm) request.node_selector.emplace(kVmRuntimeLabel, "true");
  return request;
}

// Whether a launch request (an instance's, or a job task's on `nodes` nodes) is well formed and
// could be scheduled at all: known GPU types, 1..kMaxGpusPerInstance GPUs, valid volume mounts
// (on one node only), and the scheduler's own rules (sched::validate). 400/422 saying what broke.
Status validate_spec(const model::InstanceSpec& spec, int nodes);

// Identifies requests that compete for the same capacity in the same way: once one finds no
// room in a scheduling pass, the others are not searched again in that pass.
inline std::string request_shape(const model::InstanceSpec& spec) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", fmt::join(spec.gpu_types, ","),
                     spec.min_gpu_memory_gb, spec.gpu_count, spec.gpu_milli, spec.gpu_memory_gb,
                     spec.cpu, spec.memory_gb, spec.disk_gb, fmt::join(spec.node_selector, ","),
                     needs_container_runtime(spec), spec.vm);
}

}  // namespace gpurent::controller::detail

namespace gpurent::controller {

// The names every controller translation unit uses.
using model::Instance;
using model::InstanceState;
using model::Node;
using model::NodeState;
using model::Principal;
using namespace detail;

}  // namespace gpurent::controller
