// `gpurent cp` on the node (model/file_copy.h): where a copy into a process run, a VM or a volume
// goes, and the copy itself, unpacked by runtime/workdir.h's unpack_archive (in a VM, by the
// guest's tar).
//
// Into a run: the destination is relative to the run's home, or absolute inside its home or a
// volume it mounts (a process run finds a volume mounted at /data at <home>/data). A sandboxed
// run's copy enters its sandbox and unpacks as its user, so it reaches exactly what the instance
// reaches. Into a volume: relative to the volume's root (a leading '/' means the same); unpacked
// as the volume's own user in the tenant's group (workload_users.h), umask 0007, so that every
// instance of the tenant reads and writes what was copied, and confined to the volume
// (UnpackTarget::confine); without a sandbox, as the agent.
//
// The copies block until tar ends: the node API runs them on its own worker threads.
// Thread-safety: the functions are; the WorkloadUsers they are given is.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/runtime/workload_users.h"
#include "common/result.h"
#include "model/file_copy.h"

namespace gpurent::agent {

// Where a copy into a process run goes: `root` (the home, or where a volume is below it) is
// entered, then the directories `below` it.
struct RunCopyDestination {
  std::filesystem::path root;
  std::vector<std::string> below;
  std::string shown;  // the directory as the instance sees it
};

// `volume_paths`: where the run finds its volumes (GPURENT_VOLUMES' paths). Errors:
// kInvalidArgument "invalid_path" (model::check_copy_path), "path_outside_instance" (an absolute
// path neither in the home nor in a volume).
Result<RunCopyDestination> run_copy_destination(const std::filesystem::path& home,
                                                const std::vector<std::string>& volume_paths,
                                                std::string_view path);

// Copies the archive into the process run whose directory is `workload_dir` (running).
Result<model::CopyResult> copy_into_run(const std::filesystem::path& workload_dir,
                                        const std::filesystem::path& archive,
                                        std::string_view path);

// Copies the archive into a VM run through its guest agent (vm/guest_agent.h): listed on the node
// (what it holds), written into the guest's /tmp, unpacked there by the guest's tar as root, and
// removed. The destination is relative to /workspace, or absolute anywhere in the guest: the VM is
// the instance's alone. Errors: model::check_copy_path's, guest_exec's, kUnprocessable
// "unpack_failed" with what the guest's tar said.
Result<model::CopyResult> copy_into_vm(const std::filesystem::path& guest_agent_socket,
                                       const std::filesystem::path& archive, std::string_view path);

// Copies the archive into the volume's data on this node (made when missing). `users`: null
// without a sandbox. A volume the tenant's VMs had last over virtio-fs (its directory one of the
// tenant's guest ids, workload_users.h) is written as their guests' root and left theirs: a VM
// may be running, and handing the volume to the tenant's group would take it from the VM.
Result<model::CopyResult> copy_into_volume(const std::filesystem::path& data_dir,
                                           std::string_view volume_id, std::string_view tenant_id,
                                           const std::shared_ptr<WorkloadUsers>& users,
                                           const std::filesystem::path& archive,
                                           std::string_view path);

}  // namespace gpurent::agent
