#include "agent/tool_run.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

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

// argv[0] as execve wants it: itself when it names a path, else the first executable file of that
// name on PATH; nullopt when there is none. Found before forking: only async-signal-safe calls
// may follow a fork in a process with threads.
std::optional<std::string> executable_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
    std::string candidate = fmt::format("{}/{}", dir.empty() ? "." : dir, name);
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
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

namespace {

// What a detached helper's side of the fork needs, all made before forking: after it, only
// async-signal-safe calls (the agent has other threads).
struct HelperPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  int log_fd;
  int pass_fd;
  const char* private_tmp;  // nullptr: none
  bool user_namespace;
  const char* id_map;  // "0 <host_first> <count>\n"
  int report_fd;       // write end of the reports to the agent
  int unshared_fd;     // write end: the helper's namespace exists (user_namespace)
  int mapped_fd;       // read end: its ids are mapped (user_namespace)
};

// One message to the agent: the helper's pid, or why it could not run. One write, below PIPE_BUF.
struct SpawnReport {
  char kind;  // 'p': value is the helper's pid; 'e': an errno
  int value;
};

void report(int fd, char kind, int value) {
  const SpawnReport message{kind, value};
  [[maybe_unused]] const ssize_t ignored = ::write(fd, &message, sizeof message);
}

[[noreturn]] void fail_helper(const HelperPlan& plan, int err) {
  report(plan.report_fd, 'e', err);
  ::_exit(127);
}

// "/proc/<pid>/<file>" into `out`, without the allocating formatters.
void proc_path(char (&out)[64], pid_t pid, const char* file) {
  char digits[16];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + pid % 10);
    pid /= 10;
  } while (pid > 0 && n < 15);
  size_t at = 0;
  for (const char c : std::string_view("/proc/")) out[at++] = c;
  while (n > 0) out[at++] = digits[--n];
  out[at++] = '/';
  for (const char* c = file; *c != '\0' && at + 1 < sizeof out; ++c) out[at++] = *c;
  out[at] = '\0';
}

// The intermediate child, for a helper in a user namespace: maps its ids once it has unshared
// (only a process outside the namespace, with CAP_SETUID there, may map host ids other than its
// own). Returns 0, or the errno of what failed.
int map_helper_ids(const char* id_map, int unshared_fd, pid_t helper) {
  char byte = 0;
  if (::read(unshared_fd, &byte, 1) != 1) return ECHILD;  // it failed to unshare, and said why
  for (const char* file : {"uid_map", "gid_map"}) {
    char path[64];
    proc_path(path, helper, file);
    const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    const size_t length = std::strlen(id_map);
    if (fd < 0 || ::write(fd, id_map, length) != static_cast<ssize_t>(length)) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      return err;
    }
    ::close(fd);
  }
  return 0;
}

[[noreturn]] void exec_helper(const HelperPlan& plan) {
  if (plan.private_tmp != nullptr) {
    // Private first, so that nothing mounted here reaches the node's own namespace.
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount(plan.private_tmp, "/tmp", nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      fail_helper(plan, errno);
    }
  }
  if (plan.user_namespace) {
    if (::unshare(CLONE_NEWUSER) != 0) fail_helper(plan, errno);
    const char byte = 1;
    char mapped = 0;
    if (::write(plan.unshared_fd, &byte, 1) != 1 || ::read(plan.mapped_fd, &mapped, 1) != 1) {
      ::_exit(127);  // the intermediate child has said why
    }
    if (::setgroups(0, nullptr) != 0 || ::setresgid(0, 0, 0) != 0 || ::setresuid(0, 0, 0) != 0) {
      fail_helper(plan, errno);
    }
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  HelperPlan moved = plan;
  // Out of the way of descriptor 3, which may be the one passed.
  if (moved.report_fd <= 3) moved.report_fd = ::fcntl(moved.report_fd, F_DUPFD_CLOEXEC, 4);
  const int null_fd = ::open("/dev/null", O_RDONLY);
  ::dup2(null_fd, 0);
  ::dup2(moved.log_fd, 1);
  ::dup2(moved.log_fd, 2);
  int first_closed = 3;
  if (moved.pass_fd >= 0) {
    if (moved.pass_fd == 3) {
      ::fcntl(3, F_SETFD, 0);
    } else {
      ::dup2(moved.pass_fd, 3);  // dup2 leaves the copy without FD_CLOEXEC
    }
    first_closed = 4;
  }
  // The rest close at exec, the reports among them.
  ::close_range(first_closed, ~0U, CLOSE_RANGE_CLOEXEC);
  ::execve(moved.path, moved.argv, moved.envp);
  fail_helper(moved, errno);
}

}  // namespace

Result<pid_t> spawn_detached(const DetachedRun& run) {
  if (run.argv.empty()) return fail(Error::internal("spawn_detached: nothing to run"));
  const std::string& name = run.argv.front();
  const auto executable = executable_path(name);
  if (!executable) return fail(Error::internal(fmt::format("{} cannot be run: not found", name)));
  const int log_fd =
      ::open(run.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (log_fd < 0) {
    return fail(Error::internal(
        fmt::format("cannot open {} for {}: {}", run.log.string(), name, std::strerror(errno))));
  }
  // reports: to the agent; unshared: helper to child; mapped: child to helper.
  int reports[2] = {-1, -1}, unshared[2] = {-1, -1}, mapped[2] = {-1, -1};
  const auto close_all = [&] {
    for (int* pipe : {reports, unshared, mapped}) {
      for (int i = 0; i < 2; ++i) {
        if (pipe[i] >= 0) ::close(pipe[i]);
        pipe[i] = -1;
      }
    }
  };
  if (::pipe2(reports, O_CLOEXEC) != 0 || ::pipe2(unshared, O_CLOEXEC) != 0 ||
      ::pipe2(mapped, O_CLOEXEC) != 0) {
    const int err = errno;
    close_all();
    ::close(log_fd);
    return fail(Error::internal(fmt::format("pipe2: {}", std::strerror(err))));
  }
  std::vector<std::string> args = run.argv;
  std::vector<std::string> env = environment_with({});
  const auto argv = pointers_to(args);
  const auto envp = pointers_to(env);
  const std::string id_map =
      run.user_namespace
          ? fmt::format("0 {} {}\n", run.user_namespace->host_first, run.user_namespace->count)
          : std::string();
  const HelperPlan plan{.path = executable->c_str(),
                        .argv = argv.data(),
                        .envp = envp.data(),
                        .log_fd = log_fd,
                        .pass_fd = run.pass_fd,
                        .private_tmp = run.private_tmp.empty() ? nullptr : run.private_tmp.c_str(),
                        .user_namespace = run.user_namespace.has_value(),
                        .id_map = id_map.c_str(),
                        .report_fd = reports[1],
                        .unshared_fd = unshared[1],
                        .mapped_fd = mapped[0]};
  const pid_t child = ::fork();
  if (child == 0) {
    // Async-signal-safe calls only. The child forks the helper and exits, so that the helper is
    // left to init rather than to the agent.
    ::setsid();
    const pid_t helper = ::fork();
    if (helper == 0) {
      ::close(unshared[0]);
      ::close(mapped[1]);  // a child that dies leaves the helper EOF, not a wait forever
      exec_helper(plan);
    }
    ::close(unshared[1]);  // a helper that dies leaves this child EOF
    if (helper < 0) {
      report(reports[1], 'e', errno);
      ::_exit(0);
    }
    if (plan.user_namespace) {
      if (const int err = map_helper_ids(plan.id_map, unshared[0], helper); err != 0) {
        if (err != ECHILD) report(reports[1], 'e', err);
        ::_exit(0);  // the helper reads EOF and ends
      }
      const char byte = 1;
      [[maybe_unused]] const ssize_t ignored = ::write(mapped[1], &byte, 1);
    }
    report(reports[1], 'p', helper);
    ::_exit(0);
  }
  const int fork_errno = errno;
  ::close(log_fd);
  // Only the child and the helper hold these now: when either dies, the other reads EOF. The
  // reports end at the helper's exec and the child's exit.
  for (int* fd : {&reports[1], &unshared[0], &unshared[1], &mapped[0], &mapped[1]}) {
    ::close(*fd);
    *fd = -1;
  }
  if (child < 0) {
    close_all();
    return fail(Error::internal(fmt::format("fork: {}", std::strerror(fork_errno))));
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  pid_t helper = 0;
  int err = 0;
  for (;;) {
    SpawnReport message{};
    const ssize_t got = ::read(reports[0], &message, sizeof message);
    if (got < 0 && errno == EINTR) continue;
    if (got != static_cast<ssize_t>(sizeof message)) break;
    (message.kind == 'p' ? helper : err) = message.value;
  }
  close_all();
  if (err != 0 || helper <= 0) {
    return fail(Error::internal(
        fmt::format("{} cannot be run: {}", name, std::strerror(err != 0 ? err : ECHILD))));
  }
  return helper;
}

}  // namespace gpurent::agent
