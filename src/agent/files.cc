#include "agent/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace gpurent::agent {

namespace {

// A descriptor closed when it goes out of scope.
class OwnedFd {
 public:
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Gives the descriptor to whoever closes it next (fdopendir's DIR).
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// `error` is errno as the failed call left it, read before anything else could change it.
std::unexpected<Error> walk_error(int error, const std::filesystem::path& path,
                                  std::string_view what) {
  return fail(Error::internal(fmt::format("{} {}: {}", what, path.string(), std::strerror(error))));
}

// The names in the directory `directory` (an O_PATH descriptor, `path` its name for messages),
// read through "." of it, never its name again. The listing is closed before the walk goes below,
// so that each level holds one descriptor. A directory removed meanwhile holds none.
Result<std::vector<std::string>> names_in(int directory, const std::filesystem::path& path) {
  OwnedFd listing(::openat(directory, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (listing.get() < 0) {
    const int error = errno;
    if (error == ENOENT) return std::vector<std::string>();
    return walk_error(error, path, "cannot list");
  }
  std::unique_ptr<DIR, int (*)(DIR*)> entries(::fdopendir(listing.get()), ::closedir);
  if (!entries) return walk_error(errno, path, "cannot list");
  listing.release();
  std::vector<std::string> names;
  for (errno = 0; const dirent* entry = ::readdir(entries.get()); errno = 0) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  if (const int error = errno; error != 0 && error != ENOENT) {
    return walk_error(error, path, "cannot list");
  }
  return names;
}

// Visits what the directory `directory` (an O_PATH descriptor, `path` its name) holds.
Status walk_below(int directory, const std::filesystem::path& path, int depth,
                  const std::function<Status(const TreeEntry&)>& visit) {
  if (depth > kMaxTreeDepth) {
    return fail(Error::internal(
        fmt::format("{} lies more than {} directories deep", path.string(), kMaxTreeDepth)));
  }
  GPURENT_TRY(names, names_in(directory, path));
  for (const auto& name : names) {
    OwnedFd fd(::openat(directory, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (fd.get() < 0) {
      const int error = errno;
      if (error == ENOENT) continue;  // removed meanwhile
      return walk_error(error, path / name, "cannot open");
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return walk_error(errno, path / name, "cannot stat");
    if (S_ISDIR(st.st_mode)) GPURENT_CHECK(walk_below(fd.get(), path / name, depth + 1, visit));
    GPURENT_CHECK(visit({.fd = fd.get(), .stat = st, .path = path / name}));
  }
  return {};
}

// Whether the kernel refuses a hard link to a file its maker may not write (fs.protected_hardlinks,
// read once: an operator who changes it restarts the agent).
bool hard_links_protected() {
  static const bool on = read_file("/proc/sys/fs/protected_hardlinks", 64).value_or("") == "1\n";
  return on;
}

}  // namespace

Status walk_tree(const std::filesystem::path& root,
                 const std::function<Status(const TreeEntry& entry)>& visit) {
  OwnedFd fd(::open(root.c_str(), O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return walk_error(errno, root, "cannot open");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return walk_error(errno, root, "cannot stat");
  GPURENT_CHECK(walk_below(fd.get(), root, 1, visit));
  return visit({.fd = fd.get(), .stat = st, .path = root});
}

Status chown_tree(const std::filesystem::path& root, uid_t uid, gid_t gid) {
  // The root last (walk_tree's order): give_folder takes a root that is theirs for a tree given
  // whole, so a walk cut short (a crash) is walked again.
  return walk_tree(root, [&](const TreeEntry& entry) { return chown_entry(entry, uid, gid); });
}

Status chown_entry(const TreeEntry& entry, uid_t uid, gid_t gid) {
  if (entry.stat.st_uid == uid && entry.stat.st_gid == gid) return {};
  GPURENT_CHECK(check_hard_links(entry, hard_links_protected()));
  if (::fchownat(entry.fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
    return walk_error(errno, entry.path, "cannot chown");
  }
  return {};
}

Status chmod_entry(const TreeEntry& entry, mode_t mode) {
  if (S_ISLNK(entry.stat.st_mode)) {
    return fail(Error::internal(fmt::format("cannot chmod {}: a link", entry.path.string())));
  }
  if ((entry.stat.st_mode & 07777) == mode) return {};
  GPURENT_CHECK(check_hard_links(entry, hard_links_protected()));
  // An O_PATH descriptor has no fchmod; its /proc name leads to the entry itself, not through a
  // name someone could swap meanwhile (glibc's fchmodat(AT_SYMLINK_NOFOLLOW) does the same).
  const std::string name = fmt::format("/proc/self/fd/{}", entry.fd);
  if (::chmod(name.c_str(), mode) != 0) return walk_error(errno, entry.path, "cannot chmod");
  return {};
}

Status check_hard_links(const TreeEntry& entry, bool links_protected) {
  if (links_protected || S_ISDIR(entry.stat.st_mode) || entry.stat.st_nlink <= 1) return {};
  return fail(Error::internal(fmt::format(
      "{} has {} names, and with fs.protected_hardlinks off one may be a file of the node's that "
      "the tenant linked there: the agent will not change it (sysctl fs.protected_hardlinks=1)",
      entry.path.string(), entry.stat.st_nlink)));
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
