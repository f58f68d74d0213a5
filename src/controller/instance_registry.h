// InstanceRegistry: the instances (model/instance.h), by id and in creation order: a new pending
// instance, lookups by id or by the tenant's name for it, tenants' and operators' listings, and
// the instances that mount a volume. What happens to an instance (queueing, placement, its runs,
// stopping) is the controller's; this keeps where instances are and who may see them.
//
// Invariants: instances are never removed, and a map's elements do not move, so references and
// pointers to them stay valid for the controller's lifetime (the change tracker, metering and the
// placements hold them); the creation order lists every instance once; an instance is visible to
// its own tenant and to operators only (to anyone else it does not exist); an instance's files live
// on at most one node, the one it was last placed on, and on none once it is terminated (a job
// member: once its run ended).
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/indexed_map.h"
#include "common/random.h"
#include "common/result.h"
#include "common/string_hash.h"
#include "controller/commands.h"
#include "model/instance.h"
#include "model/tenant.h"

namespace gpurent::controller {

class InstanceRegistry {
 public:
  struct Context {
    const Clock& clock;
    Rng& rng;  // draws the new instances' ids
  };
  explicit InstanceRegistry(Context context) : c_(context) {}
  InstanceRegistry(const InstanceRegistry&) = delete;
  InstanceRegistry& operator=(const InstanceRegistry&) = delete;

  // A new pending instance of the tenant, created now and last in the creation order. The caller
  // queues it and touches it in the ChangeTracker.
  model::Instance& add(std::string_view tenant_id, model::InstanceSpec spec);
  // An instance from the store's snapshot, last in the creation order (restore them oldest first).
  model::Instance& restore(model::Instance&& instance);

  // By id, or by the caller's own name for one it has not deleted; another tenant's is not found.
  Result<const model::Instance*> get(const model::Principal& caller, std::string_view id) const;
  // A page of the instances the caller sees (operators: all, or those of filter.tenant_id), in
  // creation order, after the instance named by `cursor` (empty: from the first); next_cursor
  // names the last item when more may follow.
  Result<InstancePage> list(const model::Principal& caller, const InstanceFilter& filter,
                            std::string_view cursor, size_t limit) const;
  // The instances, not terminated, that mount the volume.
  std::vector<std::string> mounted_by(std::string_view volume_id) const;

  // Where instances' files live (their homes, a VM's root disk): on the node of their last
  // placement, until they are terminated (a job member's: until its run ends). with_files_on
  // lists a node's in id order (DesiredState::instances: the agent deletes the files of those
  // that leave the list).
  std::vector<std::string> with_files_on(std::string_view node_id) const;
  // The instance is being placed on node_id: its files live there from now on, and whatever it
  // left on the node it ran on before is abandoned. Call before instance.node_id changes.
  void files_moved(const model::Instance& instance, std::string_view node_id);
  // The instance is terminated (or a job member's run ended): its files are kept nowhere.
  void files_deleted(const model::Instance& instance);

  // Every instance, in id order. The controller changes them in place; adding one is add's.
  const IndexedMap<model::Instance>& all() const { return instances_; }
  IndexedMap<model::Instance>& all() { return instances_; }
  // Throws std::out_of_range for an unknown id: for ids the controller holds.
  model::Instance& at(std::string_view id) { return instances_.at(id); }
  const model::Instance& at(std::string_view id) const { return instances_.at(id); }

 private:
  model::Instance& append(model::Instance&& instance);

  Context c_;
  IndexedMap<model::Instance> instances_;
  // Creation order, for listings and names. Pointers: instances are never erased.
  std::vector<const model::Instance*> order_;
  // Each instance's index in order_: where a listing's cursor (an instance id) resumes. Keyed by
  // the instance's own id (it never changes, and the instance never moves): no copy of the id.
  std::unordered_map<std::string_view, size_t> position_;
  // By node: the instances whose files live there (their own ids, as position_).
  std::unordered_map<std::string, std::set<std::string_view>, StringHash, std::equal_to<>>
      files_on_;
};

}  // namespace gpurent::controller
