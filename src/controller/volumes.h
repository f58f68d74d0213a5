// Volumes: tenants' persistent volumes (model/volume.h). A volume lives on one node: an
// operator's choice at creation, or else the node of the first instance placed with it mounted,
// after which it pins every instance that mounts it to that node. Storage is billed for its whole
// life, used or not, at the price in force when it was created.
//
// Invariants: a volume belongs to one tenant and only that tenant's instances may mount it (to
// everyone else, operators included, it does not exist); a volume mounted by an instance that is
// not terminated cannot be deleted; a deleted volume keeps its record (billing) but leaves every
// listing and its node's desired set; every change is touched in the ChangeTracker, durable with
// the command that made it, and a node whose set of volumes changed gets a new desired set.
//
// Part of the Controller (controller.h), which mounts volumes into instances: it asks the
// instances that mount a volume through Context::mounted_by.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/random.h"
#include "common/result.h"
#include "controller/accounts.h"
#include "controller/change_set.h"
#include "controller/change_tracker.h"
#include "controller/commands.h"
#include "controller/idempotency.h"
#include "controller/node_registry.h"
#include "controller/pricing.h"
#include "model/instance.h"
#include "model/node.h"
#include "model/tenant.h"
#include "model/volume.h"

namespace gpurent::controller {

class Volumes {
 public:
  struct Context {
    const Clock& clock;
    Rng& rng;
    ChangeTracker& tracker;
    IdempotencyKeys& idempotency;
    Accounts& accounts;  // its ledger takes the storage charges
    const Pricing& pricing;
    NodeRegistry& nodes;
    // The ids of the instances, not terminated, that mount the volume.
    std::function<std::vector<std::string>(std::string_view volume_id)> mounted_by;
  };
  explicit Volumes(Context context) : c_(std::move(context)) {}
  Volumes(const Volumes&) = delete;
  Volumes& operator=(const Volumes&) = delete;

  // The volumes from the store's snapshot.
  void restore(Snapshot& snapshot);

  // --- Tenants' commands and reads ---
  // A node may be chosen by operators only; the Idempotency-Key makes a retry return the first.
  Result<CreatedVolume> create(const model::Principal& caller, NewVolume request,
                               const std::optional<std::string>& idempotency_key = std::nullopt,
                               std::string fingerprint = {});
  // Live volumes in creation order: the caller's own, or (operators) those of tenant_id, or all.
  std::vector<const model::Volume*> list(const model::Principal& caller,
                                         const std::optional<std::string>& tenant_id = {}) const;
  // By id, or by the caller's own name for it; another tenant's is not found.
  Result<const model::Volume*> get(const model::Principal& caller, std::string_view id) const;
  // Bills it up to now and deletes it; 409 volume_in_use while an instance mounts it.
  Result<model::Volume> remove(const model::Principal& caller, std::string_view id);
  // The tenant's volumes, deleted ones too, in creation order (what storage it was billed for).
  std::vector<const model::Volume*> of_tenant(std::string_view tenant_id) const;

  // --- What the controller asks when it admits and places work ---
  // Replaces each mount's volume name by its id (as get() finds it).
  Status resolve_names(const model::Principal& caller, model::InstanceSpec& spec) const;
  // Every mounted volume is the tenant's and live, and those with a node agree on it.
  Status check_mounts(std::string_view tenant_id, const model::InstanceSpec& spec) const;
  // The node the spec's volumes pin it to, or "" for none. Volumes on different nodes: "", and
  // *conflict says which.
  std::string pinned_node(const model::InstanceSpec& spec, std::string* conflict) const;
  // The instance was placed on `node`: its volumes without a node live there from now on.
  void pin(const model::Instance& instance, const model::Node& node);
  // The live volumes on a node, in id order (its desired state).
  std::vector<std::string> on_node(std::string_view node_id) const;
  // The billing tick: every live volume's storage up to `until`.
  void meter(Timestamp until);

 private:
  Timestamp now() const { return c_.clock.now(); }
  // Posts the volume's storage charge up to `until`.
  void meter(model::Volume& volume, Timestamp until);
  // The node's desired set of volumes changed.
  void wake_node(std::string_view node_id);

  Context c_;
  std::map<std::string, model::Volume, std::less<>> volumes_;       // by id; deleted ones too
  std::vector<std::string> order_;                                  // creation order, for listings
  std::unordered_map<std::string, std::set<std::string>> on_node_;  // live ones only
};

}  // namespace gpurent::controller
