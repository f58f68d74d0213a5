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
// Thread-safety: thread-safe (the reconcile thread starts runs; the node API copies into volumes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gpurent::agent {

struct IdRange {
  uint32_t first = 0;
  uint32_t last = 0;  // inclusive
};

inline constexpr IdRange kDefaultWorkloadIds{200000, 1199999};
// A VM's guest ids that its virtiofsds map (vm/virtiofsd.h): 0 (root) to 65535 (nobody)...
inline constexpr uint32_t kGuestIdCount = 65536;
// ...and the node's ids for them: those after the workload ids, as the default range gives them.
inline constexpr uint32_t kDefaultGuestIds = kDefaultWorkloadIds.last + 1;
inline constexpr std::string_view kWorkloadUsersFile = "workload-users.log";

// "FIRST-LAST", both above 1000 (system and login users live below) and below 2^31.
Result<IdRange> parse_id_range(std::string_view text);

class WorkloadUsers {
 public:
  static Result<WorkloadUsers> open(const std::filesystem::path& data_dir, IdRange range);

  // The instance's (or volume's) uid, and the tenant's gid, assigned now if it has none yet.
  Result<uint32_t> uid_of_instance(std::string_view instance_id);
  Result<uint32_t> gid_of_tenant(std::string_view tenant_id);

 private:
  WorkloadUsers(std::filesystem::path log, IdRange range) : log_(std::move(log)), range_(range) {}
  Result<uint32_t> assign(std::string_view kind, std::string_view id,
                          std::map<std::string, uint32_t, std::less<>>& ids, uint32_t& next);

  std::filesystem::path log_;
  IdRange range_;
  std::unique_ptr<std::mutex> mutex_ =
      std::make_unique<std::mutex>();  // movable: open() returns it
  std::map<std::string, uint32_t, std::less<>> uids_;
  std::map<std::string, uint32_t, std::less<>> gids_;
  uint32_t next_uid_ = 0;
  uint32_t next_gid_ = 0;
};

}  // namespace gpurent::agent
