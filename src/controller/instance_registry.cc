#include "controller/instance_registry.h"

#include "controller/internal.h"

namespace gpurent::controller {

using model::Instance;
using model::InstanceState;

Instance& InstanceRegistry::add(std::string_view tenant_id, model::InstanceSpec spec) {
  Instance instance;
  instance.id = c_.rng.id("i-");
  instance.tenant_id = tenant_id;
  if (spec.name.empty()) spec.name = instance.id;
  instance.spec = std::move(spec);
  instance.state = InstanceState::kPending;
  instance.created_at = c_.clock.now();
  instance.queued_at = instance.created_at;
  instance.reason = "waiting for capacity";
  return append(std::move(instance));
}

Instance& InstanceRegistry::restore(Instance&& instance) {
  Instance& restored = append(std::move(instance));
  // As files_moved and files_deleted left it (a job member's files are kept while it runs).
  const bool kept = restored.job_id.empty() ? restored.state != InstanceState::kTerminated
                                            : model::holds_gpus(restored.state);
  if (kept && !restored.node_id.empty()) files_on_[restored.node_id].insert(restored.id);
  return restored;
}

Instance& InstanceRegistry::append(Instance&& instance) {
  std::string id = instance.id;
  Instance& added = instances_.emplace(std::move(id), std::move(instance)).first->second;
  position_.emplace(added.id, order_.size());
  order_.push_back(&added);
  return added;
}

Result<const Instance*> InstanceRegistry::get(const model::Principal& caller,
                                              std::string_view id) const {
  const auto it = instances_.find(id);
  if (it != instances_.end() && detail::visible_to(caller, it->second.tenant_id)) {
    return &it->second;
  }
  std::vector<std::pair<const Instance*, detail::NamedObject>> candidates;
  for (const Instance* candidate : order_) {
    if (candidate->tenant_id == caller.tenant_id &&
        candidate->state != InstanceState::kTerminated) {
      candidates.push_back({candidate, {candidate->id, candidate->spec.name}});
    }
  }
  return detail::find_by_name<Instance>("instance", id, candidates);
}

Result<InstancePage> InstanceRegistry::list(const model::Principal& caller,
                                            const InstanceFilter& filter, std::string_view cursor,
                                            size_t limit) const {
  size_t position = 0;
  if (!cursor.empty()) {
    const auto it = position_.find(cursor);
    // A cursor names an instance; one the caller may not see is as unknown as a made-up one.
    if (it == position_.end() || !get(caller, cursor)) {
      return fail(Error::invalid("invalid_query", "unknown cursor"));
    }
    position = it->second + 1;
  }
  std::optional<std::string> tenant = caller.is_operator() ? filter.tenant_id : caller.tenant_id;
  InstancePage page;
  for (; position < order_.size(); ++position) {
    const Instance& instance = *order_[position];
    if (tenant && instance.tenant_id != *tenant) continue;
    if (instance.job_id != filter.job_id.value_or("")) continue;
    if (filter.state && instance.state != *filter.state) continue;
    if (page.items.size() == limit) {
      page.next_cursor = page.items.back()->id;
      break;
    }
    page.items.push_back(&instance);
  }
  return page;
}

std::vector<std::string> InstanceRegistry::mounted_by(std::string_view volume_id) const {
  // A scan of all instances: deletions are rare, and an index of mounts would have to follow
  // every instance's life cycle.
  std::vector<std::string> users;
  for (const auto& [instance_id, instance] : instances_) {
    if (instance.state == InstanceState::kTerminated) continue;
    for (const auto& mount : instance.spec.volumes) {
      if (mount.volume_id == volume_id) users.push_back(instance_id);
    }
  }
  return users;
}

std::vector<std::string> InstanceRegistry::with_files_on(std::string_view node_id) const {
  const auto it = files_on_.find(node_id);
  if (it == files_on_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

void InstanceRegistry::files_moved(const Instance& instance, std::string_view node_id) {
  files_deleted(instance);
  files_on_[std::string(node_id)].insert(instance.id);
}

void InstanceRegistry::files_deleted(const Instance& instance) {
  if (instance.node_id.empty()) return;
  const auto it = files_on_.find(instance.node_id);
  if (it == files_on_.end()) return;
  it->second.erase(instance.id);
  if (it->second.empty()) files_on_.erase(it);
}

}  // namespace gpurent::controller
