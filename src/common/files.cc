#include "common/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpurent {
namespace {

Error io_error(std::string_view what, const std::filesystem::path& path, int err) {
  return Error::internal(fmt::format("{} {}: {}", what, path.string(), std::strerror(err)));
}

// Closes the descriptor on every return path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now, reporting the error close() may carry for buffered writes.
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

}  // namespace

Status write_file_atomic(const std::filesystem::path& path, std::string_view content, mode_t mode) {
  // The pid makes the temporary name unique between an agent and a shim writing in one directory.
  const std::filesystem::path tmp = fmt::format("{}.tmp.{}", path.string(), ::getpid());
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (fd.get() < 0) return fail(io_error("cannot create", tmp, errno));
  // open() applies the umask; a key file or the agent's identity must be exactly 0600.
  if (::fchmod(fd.get(), mode) != 0) return fail(io_error("cannot chmod", tmp, errno));
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      return fail(io_error("cannot write", tmp, err));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0 || fd.close() != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return fail(io_error("cannot sync", tmp, err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return fail(io_error("cannot rename onto", path, err));
  }
  // Make the rename itself durable: a node that loses power must not forget its identity, a
  // server its keys.
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() >= 0) ::fsync(dir_fd.get());
  return {};
}

Result<std::string> read_file(const std::filesystem::path& path, size_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      return fail({ErrorKind::kNotFound, "file_not_found",
                   fmt::format("{} does not exist", path.string())});
    }
    return fail(io_error("cannot open", path, errno));
  }
  std::string content;
  char buffer[8192];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(io_error("cannot read", path, errno));
    if (n == 0) break;
    if (content.size() + static_cast<size_t>(n) > max_bytes) {
      return fail(Error::internal(fmt::format("{} is larger than {} bytes; treating it as corrupt",
                                              path.string(), max_bytes)));
    }
    content.append(buffer, static_cast<size_t>(n));
  }
  return content;
}

}  // namespace gpurent
