#include "controller/placements.h"

#include <fmt/format.h>

#include "common/assert.h"

namespace gpurent::controller {

namespace {

bool has_max_price(const model::Instance& instance) {
  return instance.spec.pricing == model::PricingModel::kSpot && instance.spec.max_price;
}

}  // namespace

int64_t Placements::Holding::milli_of_type(std::string_view gpu_type) const {
  const auto it = milli_by_type.find(gpu_type);
  return it == milli_by_type.end() ? 0 : it->second;
}

void Placements::add(model::Instance& instance, sched::NodeAssignment part) {
  for (const auto& gpu : instance.gpus) holders_[gpu].insert(instance.id);
  const auto& assignment =
      assignments_.insert_or_assign(instance.id, sched::Assignment{{std::move(part)}})
          .first->second;
  hold(instance, 1);
  on_node_[instance.node_id].emplace(instance.id, &instance);
  if (has_max_price(instance)) with_max_price_.emplace(instance.id, &instance);
  with_declared_runtime_ += instance.spec.max_runtime_s.has_value();
  new_version(assignment);
}

void Placements::stopping(const model::Instance& instance) {
  if (const auto held = assignments_.find(instance.id); held != assignments_.end()) {
    new_version(held->second);
  }
}

void Placements::new_version(const sched::Assignment& assignment) {
  for (const auto& part : assignment.nodes) {
    if (part.node >= node_versions_.size()) node_versions_.resize(part.node + 1);
    node_versions_[part.node] = ++changes_;
  }
}

Status Placements::restore(model::Instance& instance, sched::Assignment assignment) {
  if (auto allocated = cluster_.allocate(assignment); !allocated) {
    return fail(Error::internal(
        fmt::format("restoring instance {}: {}", instance.id, allocated.error().message)));
  }
  add(instance, std::move(assignment.nodes.front()));
  return {};
}

bool Placements::remove(const model::Instance& instance) {
  const auto held = assignments_.find(instance.id);
  if (held == assignments_.end()) return false;
  for (const auto& gpu : instance.gpus) {
    if (const auto holders = holders_.find(gpu); holders != holders_.end()) {
      holders->second.erase(instance.id);
      if (holders->second.empty()) holders_.erase(holders);
    }
  }
  // The scheduler's view must match the instances: what an instance holds is allocated.
  const auto released = cluster_.release(held->second);
  GPURENT_ASSERT(released, "releasing {}: {}", instance.id, released.error().message);
  if (released_on_.size() + held->second.nodes.size() > kMaxReleaseLog) {
    released_base_ += released_on_.size();
    released_on_.clear();
  }
  for (const auto& part : held->second.nodes) released_on_.push_back(part.node);
  new_version(held->second);
  hold(instance, -1);
  assignments_.erase(held);
  if (const auto placed = on_node_.find(instance.node_id); placed != on_node_.end()) {
    placed->second.erase(instance.id);
  }
  with_max_price_.erase(instance.id);
  with_declared_runtime_ -= instance.spec.max_runtime_s.has_value();
  return true;
}

std::span<const sched::NodeHandle> Placements::released_since(uint64_t position) const {
  GPURENT_ASSERT(position >= released_begin() && position <= released_end(),
                 "release log position {} outside [{}, {}]", position, released_begin(),
                 released_end());
  return std::span(released_on_).subspan(position - released_base_);
}

const Placements::PlacedInstances& Placements::on_node(std::string_view node_id) const {
  static const PlacedInstances kNone;
  const auto it = on_node_.find(node_id);
  return it == on_node_.end() ? kNone : it->second;
}

const std::set<std::string>& Placements::holders(std::string_view gpu_uuid) const {
  static const std::set<std::string> kNone;
  const auto it = holders_.find(gpu_uuid);
  return it == holders_.end() ? kNone : it->second;
}

const Placements::Holding& Placements::holding(std::string_view tenant_id) const {
  static const Holding kNone;
  const auto it = held_.find(tenant_id);
  return it == held_.end() ? kNone : it->second;
}

const sched::Assignment& Placements::assignment(std::string_view instance_id) const {
  return assignments_.find(instance_id)->second;
}

void Placements::hold(const model::Instance& instance, int sign) {
  auto& holding = held_[instance.tenant_id];
  const int64_t milli = int64_t{instance.gpu_milli} * static_cast<int64_t>(instance.gpus.size());
  holding.milli_by_type[instance.gpu_type] += sign * milli;
  holding.milli += sign * milli;
  holding.instances += sign;
  if (instance.spec.pricing == model::PricingModel::kReserved) {
    c_.reservations.count_use(instance.spec.reservation_id,
                              sign * static_cast<int>(instance.gpus.size()));
  }
}

Status Placements::check_invariants(const IndexedMap<model::Instance>& instances) const {
  GPURENT_CHECK(cluster_.check_invariants());
  const auto broken = [](const std::string& what) {
    return fail(Error::internal("controller invariant broken: " + what));
  };
  std::map<std::string, int> milli_per_gpu;
  std::map<std::string, std::map<std::string, int64_t, std::less<>>> held;
  size_t holding = 0, with_max_price = 0, with_declared_runtime = 0;
  for (const auto& [id, instance] : instances) {
    if (!model::holds_gpus(instance.state)) continue;
    ++holding;
    if (!assignments_.contains(id)) return broken(fmt::format("{} holds GPUs unrecorded", id));
    with_declared_runtime += instance.spec.max_runtime_s.has_value();
    if (has_max_price(instance)) {
      ++with_max_price;
      if (!with_max_price_.contains(id)) {
        return broken(fmt::format("{} is spot with a max_price but not listed so", id));
      }
    }
    for (const auto& gpu : instance.gpus) milli_per_gpu[gpu] += instance.gpu_milli;
    held[instance.tenant_id][instance.gpu_type] +=
        int64_t{instance.gpu_milli} * static_cast<int64_t>(instance.gpus.size());
  }
  if (holding != assignments_.size()) {
    return broken(
        fmt::format("{} allocations for {} placed instances", assignments_.size(), holding));
  }
  if (with_declared_runtime != with_declared_runtime_) {
    return broken(fmt::format("{} counted with a max_runtime_s, {} placed", with_declared_runtime_,
                              with_declared_runtime));
  }
  if (with_max_price != with_max_price_.size()) {
    return broken(fmt::format("{} listed with a max_price, {} placed", with_max_price_.size(),
                              with_max_price));
  }
  for (const auto& [node_id, placed] : on_node_) {
    for (const auto& [id, instance] : placed) {
      if (id != instance->id || instance->node_id != node_id) {
        return broken(fmt::format("node {} lists instance {} as {} of node {}", node_id,
                                  instance->id, id, instance->node_id));
      }
    }
  }
  for (const auto& [gpu, milli] : milli_per_gpu) {
    if (milli > sched::kMilliPerGpu) {
      return broken(fmt::format("GPU {} is held {} milli", gpu, milli));
    }
  }
  for (const auto& [tenant, by_type] : held) {
    const auto tracked = held_.find(tenant);
    if (tracked == held_.end()) {
      return broken(fmt::format("tenant {} holds untracked GPUs", tenant));
    }
    for (const auto& [type, milli] : by_type) {
      if (tracked->second.milli_of_type(type) != milli) {
        return broken(fmt::format("tenant {} is tracked with the wrong {} holdings", tenant, type));
      }
    }
    // Holdings above a quota are no breach: a quota lowered below what a tenant holds stops
    // nothing. Placement's own check is tested where quotas are (scheduling_test.cc).
  }
  return {};
}

}  // namespace gpurent::controller
