// A workload's workdir (InstanceSpec::workdir): a tenant's tar.gz upload, fetched once per node
// into <data_dir>/workdirs/<upload id> (the reconciler, through the server link) and unpacked into
// an instance's home before its first start (the runtimes). Unpacked once per instance and
// upload: <data_dir>/workdirs/unpacked/<instance id> names the upload unpacked there, so a
// restarted instance keeps the files its runs changed.
//
// Unpacking runs GNU tar in the home as the instance's user (a sandboxed run's uid and gid), so
// that an archive, or a link the tenant left in the home, can only write where that user may; tar
// itself refuses members outside the directory ('..', absolute names). Without a user (no sandbox,
// or a container's home) it runs as the agent. It blocks the caller until tar ends.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string_view>

#include "common/result.h"

namespace gpurent::agent {

struct WorkdirUser {
  uid_t uid = 0;
  gid_t gid = 0;
};

std::filesystem::path workdir_archive(const std::filesystem::path& data_dir,
                                      std::string_view upload_id);

// Unpacks the upload into home unless it was unpacked there already. Errors: the archive is
// missing or tar failed (kInternal "workdir_unpack_failed", with tar's message).
Status unpack_workdir(const std::filesystem::path& data_dir, std::string_view instance_id,
                      std::string_view upload_id, const std::filesystem::path& home,
                      std::optional<WorkdirUser> user);

}  // namespace gpurent::agent
