// Node-local volume data: where a volume's files live on the node, how a workload's volumes are
// prepared for a start, and the janitor that deletes the data of volumes the server deleted.
//
// Layout: <data_dir>/volumes/<volume_id>/, created on first use (the first start of a workload
// that mounts it) and kept across runs, instance deletions and agent restarts. Each runtime makes
// it reachable at the mount path its own way (docs/runtime.md): the container runtime bind-mounts
// it; the process runtime, which has no mount namespace, links <instance_dir>/<mount path> to it.
// Both tell the workload where in GPURENT_VOLUMES ("<volume_id>=<path>,...", in spec order).
//
// Deletion (VolumeJanitor) is level-triggered and deliberately conservative, because a mistake
// loses a tenant's data: the data of a volume is deleted only when an earlier desired state of
// this node listed the volume (DesiredState::volumes) and a later one, with a higher generation,
// no longer does. What was listed is kept in <data_dir>/volumes.json, so a volume deleted while
// the agent was down is still cleaned up after its restart; a directory that no desired state
// ever listed (a stranger's, or one of a node registered under another id) is never touched.
//
// Thread-safety: none; the reconcile thread owns the janitor and the runtimes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/agent_protocol.h"

namespace gpurent::agent {

std::filesystem::path volume_dir(const std::filesystem::path& data_dir, std::string_view volume_id);

struct PreparedVolume {
  model::VolumeMount mount;
  std::filesystem::path dir;  // its data on the node (absolute)
};

// Creates the data directories of the spec's volumes that do not exist yet.
Result<std::vector<PreparedVolume>> prepare_volumes(const std::filesystem::path& data_dir,
                                                    const model::WorkloadSpec& spec);

// Gives a volume's data to the tenant's group, for sandboxed runs and copies (sandbox.h): owned by
// root and the group, mode 2770 (setgid: files made there stay the group's). Files from before
// (another owner's) are given to the group too, readable and writable by it.
Status share_volume_with_group(const std::filesystem::path& dir, gid_t gid);

// GPURENT_VOLUMES: "<volume_id>=<path>" for each volume, ',' between them ("" when none). `path`
// maps a volume to where the workload finds it.
std::string volumes_env(const std::vector<PreparedVolume>& volumes,
                        const std::function<std::string(const PreparedVolume&)>& path);

class VolumeJanitor {
 public:
  explicit VolumeJanitor(std::filesystem::path data_dir);
  // Deletes the data of volumes that the last recorded desired state listed and this one does
  // not, then records this one's list. A desired state of another node, or one not newer than
  // the recorded one, deletes nothing. A volume whose deletion failed stays recorded, so that the
  // next desired state tries again. Errors: the record could not be read or written.
  Status converge(const model::DesiredState& desired);

 private:
  struct Record {
    std::string node_id;
    int64_t generation = 0;
    std::set<std::string> volumes;
  };
  Result<std::optional<Record>> load() const;

  std::filesystem::path data_dir_;
  std::optional<Record> record_;  // cached after the first converge
  bool loaded_ = false;
};

}  // namespace gpurent::agent
