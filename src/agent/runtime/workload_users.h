// The unprivileged users and groups that sandboxed process runs (sandbox.h) run as: one user per
// instance, one group per tenant (its instances share their volumes through it), both drawn from
// one configured id range (uids and gids are separate name spaces, so the same number may be an
// instance's uid and a tenant's gid).
//
// An id is given once and kept: an instance's files keep its uid across its runs and the agent's
// restarts, so ids are never reused (an instance's disk outlives its runs; reusing its uid would
// give the next owner its files). The assignments are appended to <data_dir>/workload-users.log,
// one line each ("instance <id> <uid>" or "tenant <id> <gid>"), synced before the id is used.
// When the range is used up, allocation fails with kUnavailable and says so.
//
// A volume's copies (`gpurent cp`, runtime/workdir.h) run as a user of the volume's own, drawn as
// an instance's is (ids never meet: "v-" and "i-").
//
// Each tenant's VMs get a block of 65536 ids of their own: the node's ids for their guests' ids 0
// (root) to 65535 over virtio-fs (vm/virtiofsd.h). The blocks follow the range: the first tenant's
// is range.last+1 to range.last+65536, the next tenant's the 65536 after, and so on below 2^31
// ("guests <tenant> <first id>"). Two tenants' guests thus never make files of one owner on the
// node: a tenant's volume or disk is never the other's guests', even to a virtiofsd that a guest
// had taken over. A tenant's own VMs share its block, as its runs share its group, since they share
// its volumes.
//
// Thread-safety: thread-safe (the reconcile thread starts runs; the node API copies into volumes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gpurent::agent {

struct IdRange {
  uint32_t first = 0;
  uint32_t last = 0;  // inclusive
};

inline constexpr IdRange kDefaultWorkloadIds{200000, 1199999};
// The ids a VM's virtiofsds map (vm/virtiofsd.h): the guest's 0 (root) to 65535 (nobody)...
inline constexpr uint32_t kGuestIdCount = 65536;
// ...and the node's ids for the first tenant's guests under the default range.
inline constexpr uint32_t kDefaultGuestIds = kDefaultWorkloadIds.last + 1;
inline constexpr std::string_view kWorkloadUsersFile = "workload-users.log";

// "FIRST-LAST", both above 1000 (system and login users live below) and below 2^31.
Result<IdRange> parse_id_range(std::string_view text);

// How many tenants' blocks of guest ids fit after the range, below 2^31.
uint32_t guest_id_blocks(IdRange range);

class WorkloadUsers {
 public:
  static Result<WorkloadUsers> open(const std::filesystem::path& data_dir, IdRange range);

  // The instance's (or volume's) uid, and the tenant's gid, assigned now if it has none yet.
  Result<uint32_t> uid_of_instance(std::string_view instance_id);
  Result<uint32_t> gid_of_tenant(std::string_view tenant_id);
  // The first of the tenant's guest ids (its guests' root), assigned now if it has none yet.
  Result<uint32_t> guest_ids_of_tenant(std::string_view tenant_id);
  // The same when the tenant has them already, else nothing (a copy into a volume asks, and must
  // not use up a block for a tenant without VMs).
  std::optional<uint32_t> given_guest_ids(std::string_view tenant_id) const;

 private:
  // The ids of one kind, given in steps from `first` while an id's step fits up to `last`.
  struct Pool {
    std::string_view kind;  // the log's word
    uint32_t first = 0;
    uint32_t last = 0;
    uint32_t step = 1;
    std::string exhausted;  // the error once none is left, saying what the operator can do
    std::map<std::string, uint32_t, std::less<>> given;
    uint32_t next = 0;
  };

  WorkloadUsers(std::filesystem::path log, IdRange range);
  Result<uint32_t> assign(Pool& pool, std::string_view id);

  std::filesystem::path log_;
  std::unique_ptr<std::mutex> mutex_ =
      std::make_unique<std::mutex>();  // movable: open() returns it
  Pool uids_;
  Pool gids_;
  Pool guest_ids_;
};

}  // namespace gpurent::agent
