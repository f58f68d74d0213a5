#include "agent/runtime/workdir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "agent/files.h"
#include "agent/runtime/sandbox.h"

namespace gpurent::agent {
namespace {

constexpr size_t kMaxTarMessageBytes = 4096;

std::filesystem::path unpacked_marker(const std::filesystem::path& data_dir,
                                      std::string_view instance_id) {
  return data_dir / "workdirs" / "unpacked" / std::string(instance_id);
}

Error unpack_failed(std::string message) {
  return Error{ErrorKind::kInternal, "workdir_unpack_failed",
               fmt::format("cannot unpack the workdir: {}", message)};
}

}  // namespace

std::filesystem::path workdir_archive(const std::filesystem::path& data_dir,
                                      std::string_view upload_id) {
  return data_dir / "workdirs" / std::string(upload_id);
}

Status unpack_workdir(const std::filesystem::path& data_dir, std::string_view instance_id,
                      std::string_view upload_id, const std::filesystem::path& home,
                      std::optional<WorkdirUser> user) {
  const auto marker = unpacked_marker(data_dir, instance_id);
  if (auto done = read_file(marker, 256); done && *done == upload_id) return {};
  const auto archive = workdir_archive(data_dir, upload_id);
  const int input = ::open(archive.c_str(), O_RDONLY | O_CLOEXEC);
  if (input < 0) return fail(unpack_failed(fmt::format("{}: {}", archive.string(), std::strerror(errno))));
  int messages[2];
  if (::pipe2(messages, O_CLOEXEC) != 0) {
    ::close(input);
    return fail(unpack_failed(std::strerror(errno)));
  }
  std::string home_path = home.string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(input, 0);
    ::dup2(messages[1], 1);
    ::dup2(messages[1], 2);
    // Entered as the agent: the user may not pass the directories above its home.
    if (::chdir(home_path.c_str()) != 0) ::_exit(126);
    if (user && drop_to_sandbox_user(user->uid, user->gid) != 0) ::_exit(126);
    ::execlp("tar", "tar", "-xzf", "-", "--no-same-owner", "--no-same-permissions",
             "--delay-directory-restore", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(input);
  ::close(messages[1]);
  std::string output;
  char buffer[1024];
  ssize_t n;
  while ((n = ::read(messages[0], buffer, sizeof buffer)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (output.size() < kMaxTarMessageBytes) output.append(buffer, static_cast<size_t>(n));
  }
  ::close(messages[0]);
  int status = 0;
  if (pid < 0) return fail(unpack_failed(std::strerror(errno)));
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    while (!output.empty() && output.back() == '\n') output.pop_back();
    return fail(unpack_failed(output.empty() ? fmt::format("tar ended with status {}", status)
                                             : output));
  }
  std::error_code ec;
  std::filesystem::create_directories(marker.parent_path(), ec);
  return write_file_atomic(marker, upload_id, 0600);
}

}  // namespace gpurent::agent
