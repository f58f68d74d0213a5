#include "agent/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpurent::agent {

Status chown_tree(const std::filesystem::path& root, uid_t uid, gid_t gid) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    ::lchown(it->path().c_str(), uid, gid);
  }
  if (ec) return fail(Error::internal(fmt::format("chown {}: {}", root.string(), ec.message())));
  // The root last: give_folder takes a root that is theirs for a tree given whole, so a walk cut
  // short (a crash) is walked again.
  if (::lchown(root.c_str(), uid, gid) != 0) {
    return fail(Error::internal(fmt::format("chown {}: {}", root.string(), std::strerror(errno))));
  }
  return {};
}

Result<int> open_untrusted_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return fail(Error::not_found("file", path.string()));
    return fail(Error::internal(fmt::format("open {}: {}", path.string(), std::strerror(errno))));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(Error::internal(fmt::format("{} is not a regular file", path.string())));
  }
  return fd;
}

Result<std::string> read_untrusted_file(const std::filesystem::path& path, size_t max_bytes) {
  GPURENT_TRY(fd, open_untrusted_file(path));
  std::string content;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || content.size() + static_cast<size_t>(n) > max_bytes) {
      const bool too_long = n > 0;
      ::close(fd);
      if (n < 0) return fail(Error::internal(fmt::format("read {}", path.string())));
      if (too_long) {
        return fail(
            Error::internal(fmt::format("{} is larger than {} bytes", path.string(), max_bytes)));
      }
      return content;
    }
    content.append(buffer, static_cast<size_t>(n));
  }
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
