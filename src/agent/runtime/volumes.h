// Node-local volume data: where a volume's files live on the node, and how a workload's volumes
// are prepared for a start. The janitor (agent/janitor.h) deletes the data of volumes the server
// deleted.
//
// Layout: <data_dir>/volumes/<volume_id>/, created on first use (the first start of a workload
// that mounts it) and kept across runs, instance deletions and agent restarts. Each runtime makes
// it reachable at the mount path its own way (docs/runtime.md): the container runtime bind-mounts
// it; the process runtime, which has no mount namespace, links <instance_dir>/<mount path> to it.
// Both tell the workload where in GPURENT_VOLUMES ("<volume_id>=<path>,...", in spec order).
//
// Thread-safety: none; the reconcile thread prepares them.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
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

}  // namespace gpurent::agent
