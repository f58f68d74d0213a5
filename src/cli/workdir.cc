#include "cli/workdir.h"

#include <fcntl.h>
#include <poll.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "model/agent_protocol.h"

namespace gpurent::cli {
namespace {

Error invalid_workdir(std::string message) {
  return Error::invalid("invalid_workdir", std::move(message));
}

}  // namespace

Result<std::string> pack_workdir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return fail(invalid_workdir(fmt::format("--workdir {}: not a directory", dir.string())));
  }
  std::vector<std::string> args = {"tar", "-czf", "-", "--exclude-vcs"};
  if (std::filesystem::is_regular_file(dir / kWorkdirIgnoreFile, ec)) {
    args.push_back("--exclude-from=" + (dir / kWorkdirIgnoreFile).string());
  }
  args.insert(args.end(), {"-C", dir.string(), "."});
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    return fail(Error::internal(fmt::format("pipe: {}", std::strerror(errno))));
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  std::string packed, messages;
  bool too_large = false;
  // tar writes its archive and its complaints at once: read whichever is ready, the archive up to
  // the limit (then drained, so that tar finishes).
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (pollfd& fd : fds) {
      if (fd.fd < 0 || fd.revents == 0) continue;
      char buffer[65536];
      const ssize_t n = ::read(fd.fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fd.fd);
        fd.fd = -1;
        continue;
      }
      if (&fd == &fds[1]) {
        if (messages.size() < 4096) messages.append(buffer, static_cast<size_t>(n));
      } else if (static_cast<int64_t>(packed.size()) + n > model::kMaxWorkdirBytes) {
        too_large = true;
      } else if (!too_large) {
        packed.append(buffer, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (too_large) {
    return fail(invalid_workdir(fmt::format(
        "--workdir {}: more than {} MiB packed; list what to leave out in {}/{}, and put large "
        "data in a volume (gpurent volumes)",
        dir.string(), model::kMaxWorkdirBytes >> 20, dir.string(), kWorkdirIgnoreFile)));
  }
  if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fail(Error::internal(fmt::format("tar could not pack {}: {}", dir.string(), messages)));
  }
  return packed;
}

Result<std::string> upload_workdir(Context& ctx, client::ApiClient& api,
                                   const std::filesystem::path& dir) {
  GPURENT_TRY(packed, pack_workdir(dir));
  GPURENT_TRY(upload, api.upload(packed));
  const std::string id = upload.value("id", "");
  ctx.err() << fmt::format("workdir {}: {:.1f} KiB packed, uploaded as {}\n", dir.string(),
                           static_cast<double>(packed.size()) / 1024, id)
            << std::flush;
  return id;
}

}  // namespace gpurent::cli
