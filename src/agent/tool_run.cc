#include "agent/tool_run.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

extern char** environ;

namespace gpurent::agent {
namespace {

// The agent's environment with `extra` on top, as "NAME=value" strings.
std::vector<std::string> environment_with(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const auto equals = text.find('=');
    if (equals != std::string_view::npos && extra.contains(std::string(text.substr(0, equals)))) {
      continue;
    }
    out.emplace_back(text);
  }
  for (const auto& [name, value] : extra) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& text : strings) out.push_back(text.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::optional<ToolOutput> run_tool(const ToolRun& run) {
  if (run.argv.empty()) return std::nullopt;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return std::nullopt;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  if (run.with_stderr) posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  // Nothing else of the agent's: a tool that outlives it (QEMU daemonizes) would otherwise keep
  // the agent's sockets open, its node API's listening one among them, and take their connections.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  std::vector<std::string> args = run.argv;
  std::vector<std::string> env = environment_with(run.env);
  const auto argv = pointers_to(args);
  const auto envp = pointers_to(env);
  pid_t pid = 0;
  const int spawned =
      ::posix_spawnp(&pid, args.front().c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    return std::nullopt;
  }
  ToolOutput out;
  const auto deadline = std::chrono::steady_clock::now() + run.timeout;
  while (out.output.size() < run.max_output_bytes) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      out.timed_out = true;
      break;
    }
    pollfd readable{.fd = pipe_fds[0], .events = POLLIN, .revents = 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      out.timed_out = ready == 0;
      break;
    }
    char buffer[4096];
    const ssize_t got = ::read(pipe_fds[0], buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    out.output.append(buffer, static_cast<size_t>(got));
  }
  ::close(pipe_fds[0]);
  // Ended already (then it waits to be reaped and the signal does nothing), or hung, or still
  // writing past the bound.
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return out;
}

}  // namespace gpurent::agent
