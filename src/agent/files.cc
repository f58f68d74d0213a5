#include "agent/files.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpurent::agent {

Status chown_tree(const std::filesystem::path& root, uid_t uid, gid_t gid) {
  std::error_code ec;
  if (::lchown(root.c_str(), uid, gid) != 0) {
    return fail(Error::internal(fmt::format("chown {}: {}", root.string(), std::strerror(errno))));
  }
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    ::lchown(it->path().c_str(), uid, gid);
  }
  if (ec) return fail(Error::internal(fmt::format("chown {}: {}", root.string(), ec.message())));
  return {};
}

bool lies_below(const std::filesystem::path& path, const std::filesystem::path& dir) {
  const auto relative = path.lexically_normal().lexically_relative(dir.lexically_normal());
  return !relative.empty() && relative != "." && *relative.begin() != "..";
}

Status give_folder(const std::filesystem::path& directory, uid_t uid, gid_t gid) {
  struct stat st {};
  if (::lstat(directory.c_str(), &st) != 0) {
    return fail(Error::internal(
        fmt::format("cannot share {}: {}", directory.string(), std::strerror(errno))));
  }
  if (st.st_uid == uid && st.st_gid == gid) return {};
  return chown_tree(directory, uid, gid);
}

}  // namespace gpurent::agent
