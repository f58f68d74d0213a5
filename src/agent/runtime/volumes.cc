#include "agent/runtime/volumes.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "agent/files.h"

namespace gpurent::agent {
namespace {

constexpr std::string_view kVolumesDir = "volumes";

}  // namespace

std::filesystem::path volume_dir(const std::filesystem::path& data_dir,
                                 std::string_view volume_id) {
  return std::filesystem::absolute(data_dir / kVolumesDir / volume_id);
}

Result<std::vector<PreparedVolume>> prepare_volumes(const std::filesystem::path& data_dir,
                                                    const model::WorkloadSpec& spec) {
  std::vector<PreparedVolume> prepared;
  for (const auto& mount : spec.volumes) {
    // validate_workload has checked the id: it is a plain directory name.
    auto dir = volume_dir(data_dir, mount.volume_id);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return fail(Error::internal(fmt::format("cannot create the directory of volume {}: {}",
                                              mount.volume_id, ec.message())));
    }
    prepared.push_back({mount, std::move(dir)});
  }
  return prepared;
}

std::string volumes_env(const std::vector<PreparedVolume>& volumes,
                        const std::function<std::string(const PreparedVolume&)>& path) {
  std::string out;
  for (const auto& volume : volumes) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}={}", volume.mount.volume_id, path(volume));
  }
  return out;
}

Status share_volume_with_group(const std::filesystem::path& dir, gid_t gid) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || st.st_gid != gid) {
    // The volume's root last (walk_tree): its group says the walk was done whole.
    GPURENT_CHECK(walk_tree(dir, [&](const TreeEntry& entry) -> Status {
      GPURENT_CHECK(chown_entry(entry, 0, gid));
      if (S_ISLNK(entry.stat.st_mode)) return {};
      // Files from before the sandbox: the group reads and writes them, as the owner could. A
      // file keeps no set-id bit: root's now, it would run as root, or as the tenant's group.
      const mode_t group = S_ISDIR(entry.stat.st_mode) ? S_IRWXG : S_IRGRP | S_IWGRP;
      const mode_t kept = S_ISDIR(entry.stat.st_mode) ? 07777 : 00777;
      return chmod_entry(entry, (entry.stat.st_mode & kept) | group);
    }));
  }
  if (::chmod(dir.c_str(), 02770) != 0) {
    return fail(Error::internal(fmt::format("chmod {}: {}", dir.string(), std::strerror(errno))));
  }
  return {};
}

}  // namespace gpurent::agent
