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
    GPURENT_CHECK(chown_tree(dir, 0, gid));
    // Files from before the sandbox: the group reads and writes them, as the owner could.
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_symlink(ec)) {
        std::filesystem::permissions(
            it->path(),
            std::filesystem::perms::group_read | std::filesystem::perms::group_write |
                (it->is_directory(ec) ? std::filesystem::perms::group_exec
                                      : std::filesystem::perms::none),
            std::filesystem::perm_options::add | std::filesystem::perm_options::nofollow, ec);
      }
    }
  }
  if (::chmod(dir.c_str(), 02770) != 0) {
    return fail(Error::internal(fmt::format("chmod {}: {}", dir.string(), std::strerror(errno))));
  }
  return {};
}

}  // namespace gpurent::agent
