#include "controller/volumes.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "billing/billing.h"
#include "controller/internal.h"

namespace gpurent::controller {

using model::Volume;
using model::VolumeState;

void Volumes::restore(Snapshot& snapshot) {
  std::sort(snapshot.volumes.begin(), snapshot.volumes.end(), [](const Volume& a, const Volume& b) {
    return std::tie(a.created_at, a.id) < std::tie(b.created_at, b.id);
  });
  for (auto& volume : snapshot.volumes) {
    if (volume.state == VolumeState::kAvailable && !volume.node_id.empty()) {
      on_node_[volume.node_id].insert(volume.id);
    }
    order_.push_back(volume.id);
    volumes_.emplace(volume.id, std::move(volume));
  }
}

Result<CreatedVolume> Volumes::create(const Principal& caller, NewVolume request,
                                      const std::optional<std::string>& idempotency_key,
                                      std::string fingerprint) {
  GPURENT_TRY(first, replayed_creation<CreatedVolume>(c_.idempotency, caller, idempotency_key,
                                                      fingerprint, volumes_));
  if (first) return std::move(*first);
  if (!model::valid_volume_name(request.name)) {
    return fail(Error::invalid(
        "invalid_field",
        fmt::format("field 'name' must be 1..{} of [A-Za-z0-9_.-], starting with a letter or digit",
                    model::kMaxVolumeNameLength)));
  }
  if (request.size_gb < 1 || request.size_gb > model::kMaxVolumeSizeGb) {
    return fail(Error::invalid(
        "invalid_field", fmt::format("field 'size_gb' must be 1..{}", model::kMaxVolumeSizeGb)));
  }
  if (!request.node_id.empty()) {
    if (!caller.is_operator()) return fail(forbidden("choose a volume's node"));
    if (!c_.nodes.contains(request.node_id)) {
      return fail(Error::not_found("node", request.node_id));
    }
  }
  if (!c_.accounts.has_tenant(caller.tenant_id)) {
    return fail(Error::not_found("tenant", caller.tenant_id));
  }
  Volume volume{.id = c_.rng.id("v-"),
                .tenant_id = caller.tenant_id,
                .name = std::move(request.name),
                .size_gb = request.size_gb,
                .node_id = std::move(request.node_id),
                .state = VolumeState::kAvailable,
                .created_at = now(),
                .deleted_at = std::nullopt,
                .price_per_gb_month = c_.pricing.book().at(now()).storage_per_gb_month,
                .metered_until = now()};
  if (!volume.node_id.empty()) {
    on_node_[volume.node_id].insert(volume.id);
    wake_node(volume.node_id);
  }
  order_.push_back(volume.id);
  c_.idempotency.remember(caller.tenant_id, idempotency_key, std::move(fingerprint), volume.id);
  spdlog::info("created volume={} tenant={} size_gb={}", volume.id, volume.tenant_id,
               volume.size_gb);
  const std::string id = volume.id;
  const Volume& created = volumes_.emplace(id, std::move(volume)).first->second;
  c_.tracker.touch_volume(created);
  return CreatedVolume{created, false};
}

std::vector<const Volume*> Volumes::list(const Principal& caller,
                                         const std::optional<std::string>& tenant_id) const {
  const std::optional<std::string> tenant =
      caller.is_operator() ? tenant_id : std::optional(caller.tenant_id);
  std::vector<const Volume*> out;
  for (const auto& id : order_) {
    const Volume& volume = volumes_.at(id);
    if (volume.state == VolumeState::kDeleted || (tenant && volume.tenant_id != *tenant)) continue;
    out.push_back(&volume);
  }
  return out;
}

std::vector<const Volume*> Volumes::of_tenant(std::string_view tenant_id) const {
  std::vector<const Volume*> out;
  for (const auto& id : order_) {
    const Volume& volume = volumes_.at(id);
    if (volume.tenant_id == tenant_id) out.push_back(&volume);
  }
  return out;
}

Result<const Volume*> Volumes::get(const Principal& caller, std::string_view id) const {
  const auto it = volumes_.find(id);
  if (it != volumes_.end() && it->second.state != VolumeState::kDeleted &&
      visible_to(caller, it->second.tenant_id)) {
    return &it->second;
  }
  std::vector<std::pair<const Volume*, NamedObject>> candidates;
  for (const auto& volume_id : order_) {
    const Volume& candidate = volumes_.at(volume_id);
    if (candidate.tenant_id == caller.tenant_id && candidate.state != VolumeState::kDeleted) {
      candidates.push_back({&candidate, {candidate.id, candidate.name}});
    }
  }
  return find_by_name<Volume>("volume", id, candidates);
}

Result<Volume> Volumes::remove(const Principal& caller, std::string_view id) {
  GPURENT_TRY(found, get(caller, id));
  Volume& volume = volumes_.at(found->id);
  if (const auto users = c_.mounted_by(volume.id); !users.empty()) {
    return fail(Error::conflict(
        "volume_in_use", fmt::format("volume {} is mounted by instance(s) {}; delete them first",
                                     volume.id, fmt::join(users, ", "))));
  }
  meter(volume, now());
  volume.state = VolumeState::kDeleted;
  volume.deleted_at = now();
  c_.tracker.touch_volume(volume);
  if (!volume.node_id.empty()) {
    on_node_[volume.node_id].erase(volume.id);
    // The agent deletes the data of a volume that leaves its desired set.
    wake_node(volume.node_id);
  }
  spdlog::info("deleted volume={} tenant={}", volume.id, volume.tenant_id);
  return volume;
}

Status Volumes::resolve_names(const Principal& caller, model::InstanceSpec& spec) const {
  for (auto& mount : spec.volumes) {
    GPURENT_TRY(found, get(caller, mount.volume_id));
    mount.volume_id = found->id;
  }
  return {};
}

Status Volumes::check_mounts(std::string_view tenant_id, const model::InstanceSpec& spec) const {
  for (const auto& mount : spec.volumes) {
    const auto it = volumes_.find(mount.volume_id);
    // Another tenant's volume is as unknown as a made-up one, also to operators: an instance
    // mounts only its own tenant's data.
    if (it == volumes_.end() || it->second.state == VolumeState::kDeleted ||
        it->second.tenant_id != tenant_id) {
      return fail(Error::not_found("volume", mount.volume_id));
    }
  }
  std::string conflict;
  pinned_node(spec, &conflict);
  if (!conflict.empty()) return fail(Error::unprocessable("volumes_on_different_nodes", conflict));
  return {};
}

std::string Volumes::pinned_node(const model::InstanceSpec& spec, std::string* conflict) const {
  std::string node_id, pinned_by;
  for (const auto& mount : spec.volumes) {
    const auto it = volumes_.find(mount.volume_id);
    if (it == volumes_.end() || it->second.node_id.empty()) continue;
    if (node_id.empty()) {
      node_id = it->second.node_id;
      pinned_by = it->first;
    } else if (it->second.node_id != node_id) {
      *conflict = fmt::format("volume {} lives on node {} and volume {} on node {}", pinned_by,
                              node_id, it->first, it->second.node_id);
      return "";
    }
  }
  return node_id;
}

void Volumes::pin(const model::Instance& instance, const model::Node& node) {
  for (const auto& mount : instance.spec.volumes) {
    Volume& volume = volumes_.at(mount.volume_id);
    if (!volume.node_id.empty() || volume.state == VolumeState::kDeleted) continue;
    volume.node_id = node.id;
    on_node_[node.id].insert(volume.id);
    c_.tracker.touch_volume(volume);
    spdlog::info("volume={} lives on node={} (first used by instance={})", volume.id, node.id,
                 instance.id);
  }
}

std::vector<std::string> Volumes::on_node(std::string_view node_id) const {
  const auto it = on_node_.find(std::string(node_id));
  if (it == on_node_.end()) return {};
  return {it->second.begin(), it->second.end()};  // a std::set: in id order
}

void Volumes::meter(Timestamp until) {
  // Storage is billed for the volume's whole life, used or not, node up or not.
  for (auto& [id, volume] : volumes_) {
    if (volume.state == VolumeState::kAvailable) meter(volume, until);
  }
}

void Volumes::meter(Volume& volume, Timestamp until) {
  const auto transfer = billing::meter_volume(volume, until);
  c_.tracker.touch_volume(volume);
  if (!transfer) return;
  if (auto posted = c_.accounts.post(*transfer); !posted) {
    spdlog::error("metering volume={} failed: {}", volume.id, posted.error().message);
  }
}

void Volumes::wake_node(std::string_view node_id) {
  c_.tracker.touch_node(c_.nodes.at(node_id), /*desired_set_changed=*/true);
}

}  // namespace gpurent::controller
