#include "agent/files.h"

#include <fmt/format.h>
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

}  // namespace gpurent::agent
