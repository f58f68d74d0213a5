// Persistent per-tenant volumes: a directory of data on one node that instances mount at a path.
//
// A volume belongs to one tenant and lives on one node (node-local storage): its node is chosen
// when the first instance that mounts it is placed (or given by an operator at creation), and from
// then on it pins every instance that mounts it to that node. It outlives the instances that use
// it (stop, start and deletion of an instance leave its data alone) and is deleted only on request,
// which is refused while an instance that is not terminated mounts it.
//
// Billing: size_gb x price_per_gb_month for every second of its life, a month being
// kSecondsPerBillingMonth (30 days); metered like a run (billing::meter_volume), with the price
// locked at creation.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/field_table.h"
#include "common/json.h"
#include "common/money.h"
#include "common/result.h"
#include "model/json_form.h"

namespace gpurent::model {

inline constexpr int kMaxVolumeSizeGb = 65536;  // 64 TiB: more than any node's local disk
inline constexpr size_t kMaxVolumeMounts = 16;  // per instance
inline constexpr size_t kMaxVolumeNameLength = 63;
inline constexpr size_t kMaxMountPathLength = 255;
// A billing month: storage is priced per GB-month, and a month is 30 days of seconds.
inline constexpr int64_t kSecondsPerBillingMonth = int64_t{30} * 24 * 3600;

enum class VolumeState { kAvailable, kDeleted };
std::string_view to_string(VolumeState state);
bool parse_volume_state(std::string_view text, VolumeState* out);
inline bool from_string(std::string_view text, VolumeState* out) {
  return parse_volume_state(text, out);
}

struct Volume {
  std::string id;  // "v-..."
  std::string tenant_id;
  std::string name;
  int size_gb = 0;
  std::string node_id;  // empty until it is placed (or given by an operator)
  VolumeState state = VolumeState::kAvailable;
  Timestamp created_at{};
  std::optional<Timestamp> deleted_at;
  Micros price_per_gb_month = 0;  // locked at creation
  // Metering, as for a run (model::UsageRecord): whole seconds billed so far, up to
  // metered_until, and charged == charge_pro_rata(price, size_gb, billed_seconds, month).
  Timestamp metered_until{};
  int64_t billed_seconds = 0;
  Micros charged = 0;
};

template <class V, schema::Of<Volume> S>
void fields(V& visit, S& x) {
  visit("billed_seconds", x.billed_seconds);
  visit("charged", x.charged);
  visit("created_at", x.created_at);
  visit("deleted_at", x.deleted_at, schema::kOptional);
  visit("id", x.id);
  visit("metered_until", x.metered_until);
  visit("name", x.name);
  visit("node_id", x.node_id);
  visit("price_per_gb_month", x.price_per_gb_month);
  visit("size_gb", x.size_gb);
  visit("state", x.state);
  visit("tenant_id", x.tenant_id);
}

// A volume mounted into an instance at an absolute path.
struct VolumeMount {
  std::string volume_id;
  std::string mount_path;
  auto operator<=>(const VolumeMount&) const = default;
};

// The form of a mount in the API, the store and the agent protocol.
template <class V, schema::Of<VolumeMount> S>
void fields(V& visit, S& x) {
  visit("mount_path", x.mount_path);
  visit("volume_id", x.volume_id);
}

// Volume names: 1..63 of [A-Za-z0-9_.-], starting with a letter or digit.
bool valid_volume_name(std::string_view name);
// Volume ids become directory names on nodes: [A-Za-z0-9_.-], 1..128, not starting with '.'.
bool valid_volume_id(std::string_view id);
// The mounts of one instance: at most kMaxVolumeMounts; each volume once; each path absolute and
// normalised (no empty, "." or ".." components, no trailing '/'), not "/", not "/workspace" (the
// container runtime mounts the instance's disk there), not under /proc, /sys or /dev, without ':'
// or ',' (they separate fields in engine binds and in GPURENT_VOLUMES), and no path inside
// another. Errors are "invalid_field" naming the field.
Status validate_volume_mounts(const std::vector<VolumeMount>& mounts);

}  // namespace gpurent::model
