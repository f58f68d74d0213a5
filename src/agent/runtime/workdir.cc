#include "agent/runtime/workdir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>

#include "agent/files.h"
#include "common/pipes.h"

namespace gpurent::agent {
namespace {

constexpr size_t kMaxTarMessageBytes = 4096;
// The child's own exit statuses, apart from tar's (0, 1, 2).
constexpr int kBadDestination = 125;
constexpr int kCannotEnter = 126;
constexpr int kNoTar = 127;

std::filesystem::path unpacked_marker(const std::filesystem::path& data_dir,
                                      std::string_view instance_id) {
  return data_dir / "workdirs" / "unpacked" / std::string(instance_id);
}

Error unpack_failed(std::string message) {
  return Error{ErrorKind::kInternal, "workdir_unpack_failed",
               fmt::format("cannot unpack the workdir: {}", message)};
}

// In the child (async-signal-safe): says why and exits.
[[noreturn]] void die(int status, std::string_view first, std::string_view second = {},
                      std::string_view third = {}) {
  for (const std::string_view part : {first, second, third}) {
    [[maybe_unused]] const ssize_t ignored = ::write(2, part.data(), part.size());
  }
  ::_exit(status);
}

// In the child, as root (async-signal-safe): a mount namespace of its own in which root is the
// only writable mount.
void confine_to(const char* root) {
  mount_attr read_only{};
  read_only.attr_set = MOUNT_ATTR_RDONLY;
  mount_attr writable{};
  writable.attr_clr = MOUNT_ATTR_RDONLY;
  if (::unshare(CLONE_NEWNS) != 0 ||
      ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      ::mount(root, root, nullptr, MS_BIND, nullptr) != 0 ||
      ::mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &read_only, sizeof read_only) != 0 ||
      ::mount_setattr(AT_FDCWD, root, 0, &writable, sizeof writable) != 0) {
    die(kCannotEnter, "cannot confine the copy to ", root, "\n");
  }
}

std::string_view next_field(std::string_view& line) {
  const size_t start = line.find_first_not_of(' ');
  if (start == std::string_view::npos) {
    line = {};
    return {};
  }
  line.remove_prefix(start);
  const size_t end = line.find(' ');
  const std::string_view field = line.substr(0, end);
  line.remove_prefix(end == std::string_view::npos ? line.size() : end + 1);
  return field;
}

}  // namespace

std::filesystem::path workdir_archive(const std::filesystem::path& data_dir,
                                      std::string_view upload_id) {
  return data_dir / "workdirs" / std::string(upload_id);
}

void TarListing::feed(std::string_view piece) {
  while (!piece.empty()) {
    const size_t newline = piece.find('\n');
    if (newline == std::string_view::npos) {
      if (partial_.size() < 2 * model::kMaxCopyPathLength + 256) partial_.append(piece);
      return;
    }
    partial_.append(piece.substr(0, newline));
    line(partial_);
    partial_.clear();
    piece.remove_prefix(newline + 1);
  }
}

model::CopyResult TarListing::finish() {
  if (!partial_.empty()) line(partial_);
  partial_.clear();
  return std::move(result_);
}

// "<mode> <uid>/<gid> <size> <date> <time> <name>", the name followed by " -> <target>" for a
// symbolic link and " link to <target>" for a hard one; names are escaped by tar (no newlines).
void TarListing::line(std::string_view line) {
  if (line.empty()) return;
  const char type = line.front();
  next_field(line);  // mode
  next_field(line);  // owner
  const std::string_view size = next_field(line);
  next_field(line);  // date
  next_field(line);  // time
  std::string_view name = line;
  if (type == 'l') name = name.substr(0, name.find(" -> "));
  if (type == 'h') name = name.substr(0, name.find(" link to "));
  if (name.starts_with("./")) name.remove_prefix(2);
  if (name.empty() || name == ".") return;  // the destination itself
  switch (type) {
    case 'd':
      result_.directories += 1;
      break;
    case 'l':
    case 'h':
      result_.links += 1;
      break;
    default: {
      result_.files += 1;
      int64_t bytes = 0;
      const auto [ptr, ec] = std::from_chars(size.data(), size.data() + size.size(), bytes);
      if (ec == std::errc() && ptr == size.data() + size.size()) result_.bytes += bytes;
    }
  }
  if (result_.names.size() < model::kMaxCopiedNames) {
    result_.names.emplace_back(name);
  } else {
    result_.names_truncated = true;
  }
}

Result<model::CopyResult> unpack_archive(const std::filesystem::path& archive,
                                         const UnpackTarget& target) {
  const int input = ::open(archive.c_str(), O_RDONLY | O_CLOEXEC);
  if (input < 0) {
    return fail(
        Error::internal(fmt::format("cannot open {}: {}", archive.string(), std::strerror(errno))));
  }
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(input);
    return fail(Error::internal(fmt::format("pipe: {}", std::strerror(errno))));
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(input);
    ::close(out[0]);
    ::close(out[1]);
    return fail(Error::internal(fmt::format("pipe: {}", std::strerror(errno))));
  }
  // Everything the child needs is made before the fork: the agent is multithreaded, so the child
  // makes system calls only.
  const std::string root = target.root.string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    become_command_child(input, out[1], err[1]);
    if (target.sandbox) enter_sandbox_as_user(*target.sandbox, "gpurent cp");
    if (target.confine) confine_to(root.c_str());
    // Entered as the agent: the user may not pass the directories above it.
    if (::chdir(root.c_str()) != 0) die(kCannotEnter, "cannot enter ", root, "\n");
    if (target.user && drop_to_sandbox_user(target.user->uid, target.user->gid) != 0) {
      die(kCannotEnter, "cannot become the user that unpacks\n");
    }
    ::umask(target.umask);
    for (const std::string& name : target.below) {
      if (::mkdir(name.c_str(), 0777) != 0 && errno != EEXIST) {
        die(kBadDestination, "cannot make directory '", name, "' of the destination\n");
      }
      const int dir = ::open(name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (dir < 0 || ::fchdir(dir) != 0) {
        die(kBadDestination, "'", name,
            "' in the destination is a symbolic link or not a directory\n");
      }
      ::close(dir);
    }
    ::close_range(3, ~0U, 0);
    ::execlp("tar", "tar", "-xzvv", "-f", "-", "--numeric-owner", "--no-same-owner",
             "--no-same-permissions", "--delay-directory-restore", static_cast<char*>(nullptr));
    die(kNoTar, "cannot run tar\n");
  }
  const int fork_errno = errno;
  ::close(input);
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(out[0]);
    ::close(err[0]);
    return fail(Error::internal(fmt::format("fork: {}", std::strerror(fork_errno))));
  }
  TarListing listing;
  std::string messages;
  const bool in_time = drain_pipes(
      out[0], [&](std::string_view piece) { listing.feed(piece); }, err[0],
      [&](std::string_view piece) {
        if (messages.size() < kMaxTarMessageBytes) messages.append(piece);
      },
      std::chrono::steady_clock::now() + target.timeout);
  if (!in_time) ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  while (!messages.empty() && messages.back() == '\n') messages.pop_back();
  if (!in_time) {
    return fail(Error::unprocessable(
        "unpack_failed",
        fmt::format("unpacking took longer than {} s and was stopped", target.timeout.count())));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return listing.finish();
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (messages.empty()) messages = fmt::format("tar ended with status {}", code);
  if (code == kBadDestination) return fail(Error::unprocessable("invalid_destination", messages));
  if (code == kCannotEnter || code == kNoTar) return fail(Error::internal(messages));
  return fail(Error::unprocessable("unpack_failed", messages));
}

Status unpack_workdir(const std::filesystem::path& data_dir, std::string_view instance_id,
                      std::string_view upload_id, const std::filesystem::path& home,
                      std::optional<WorkdirUser> user) {
  const auto marker = unpacked_marker(data_dir, instance_id);
  if (auto done = read_file(marker, 256); done && *done == upload_id) return {};
  auto unpacked =
      unpack_archive(workdir_archive(data_dir, upload_id), {.root = home, .user = user});
  if (!unpacked) return fail(unpack_failed(unpacked.error().message));
  std::error_code ec;
  std::filesystem::create_directories(marker.parent_path(), ec);
  return write_file_atomic(marker, upload_id, 0600);
}

Status forget_unpacked_workdir(const std::filesystem::path& data_dir,
                               std::string_view instance_id) {
  std::error_code ec;
  std::filesystem::remove(unpacked_marker(data_dir, instance_id), ec);
  if (ec) {
    return fail(Error::internal(
        fmt::format("cannot forget the workdir unpacked for {}: {}", instance_id, ec.message())));
  }
  return {};
}

}  // namespace gpurent::agent
