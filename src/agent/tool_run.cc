#include "agent/tool_run.h"

#include "agent/files.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
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
  // Nothing else of the agent's: a tool that outlives it (passt daemonizes) would otherwise keep
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
  const char* const* covers;
  size_t cover_count;
  // Below the covers: the directories to make (parents first), then each revealed path, its mount
  // point made (a directory or an empty file) and bound from an O_PATH descriptor (reveal_fds,
  // room for reveal_count) opened in the new namespace before the covers hid it.
  const char* const* cover_dirs;
  size_t cover_dir_count;
  const char* const* reveal_paths;
  const char* reveal_kinds;  // 'd': a directory, 'f': a file
  int* reveal_fds;
  size_t reveal_count;
  bool run_as;
  uid_t uid;
  gid_t gid;
  const gid_t* groups;
  size_t group_count;
  rlim_t memlock_bytes;  // 0: unchanged
  int umask;             // -1: the agent's
  bool user_namespace;
  const char* id_map;  // "0 <host_first> <count>\n"
  int report_fd;       // write end of the reports to the agent
  int unshared_fd;     // write end: the helper's namespace exists (user_namespace)
  int mapped_fd;       // read end: its ids are mapped (user_namespace)
};

// One message to the agent: the helper's pid, or why it could not run. One write, below PIPE_BUF.
struct SpawnReport {
  char kind;  // 'p': value is the helper's pid; 'e': an errno; 'l': the errno of its memlock limit
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

// `prefix`, a number, then `suffix`, into `out`, without the allocating formatters.
void numbered_path(char (&out)[64], std::string_view prefix, int number, const char* suffix) {
  char digits[16];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + number % 10);
    number /= 10;
  } while (number > 0 && n < 15);
  size_t at = 0;
  for (const char c : prefix) out[at++] = c;
  while (n > 0) out[at++] = digits[--n];
  for (const char* c = suffix; *c != '\0' && at + 1 < sizeof out; ++c) out[at++] = *c;
  out[at] = '\0';
}

// The intermediate child, for a helper in a user namespace: maps its ids once it has unshared
// (only a process outside the namespace, with CAP_SETUID there, may map host ids other than its
// own). Returns 0, or the errno of what failed.
int map_helper_ids(const char* id_map, int unshared_fd, pid_t helper) {
  char byte = 0;
  if (::read(unshared_fd, &byte, 1) != 1) return ECHILD;  // it failed to unshare, and said why
  for (const char* file : {"/uid_map", "/gid_map"}) {
    char path[64];
    numbered_path(path, "/proc/", helper, file);
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

// The covers: an empty tmpfs over each, the revealed paths bind-mounted back, then the tmpfs made
// read-only. Returns 0, or the errno of what failed.
int cover_and_reveal(const HelperPlan& plan) {
  for (size_t i = 0; i < plan.reveal_count; ++i) {
    plan.reveal_fds[i] = ::open(plan.reveal_paths[i], O_PATH | O_CLOEXEC);
    if (plan.reveal_fds[i] < 0) return errno;
  }
  for (size_t i = 0; i < plan.cover_count; ++i) {
    if (::mount("tmpfs", plan.covers[i], "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0711") !=
        0) {
      return errno;
    }
  }
  for (size_t i = 0; i < plan.cover_dir_count; ++i) {
    if (::mkdir(plan.cover_dirs[i], 0711) != 0 && errno != EEXIST) return errno;
    if (::chmod(plan.cover_dirs[i], 0711) != 0) return errno;  // whatever the agent's umask
  }
  for (size_t i = 0; i < plan.reveal_count; ++i) {
    const char* target = plan.reveal_paths[i];
    if (plan.reveal_kinds[i] == 'd') {
      if (::mkdir(target, 0700) != 0 && errno != EEXIST) return errno;
    } else {
      const int fd = ::open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
      if (fd < 0) return errno;
      ::close(fd);
    }
    char source[64];
    numbered_path(source, "/proc/self/fd/", plan.reveal_fds[i], "");
    if (::mount(source, target, nullptr, MS_BIND | MS_REC, nullptr) != 0) return errno;
  }
  for (size_t i = 0; i < plan.cover_count; ++i) {
    if (::mount(nullptr, plan.covers[i], nullptr,
                MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      return errno;
    }
  }
  return 0;
}

// Becomes plan's user, for good: its groups, its ids, and no_new_privs. Returns 0 or an errno.
// The raw system calls: glibc's wrappers signal every thread of the process to change with it,
// which is not async-signal-safe after a fork (as in sandbox.cc).
int drop_to(const HelperPlan& plan) {
  if (::syscall(SYS_setgroups, plan.group_count, plan.groups) != 0 ||
      ::syscall(SYS_setresgid, plan.gid, plan.gid, plan.gid) != 0 ||
      ::syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid) != 0 ||
      ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return errno;
  }
  return 0;
}

[[noreturn]] void exec_helper(const HelperPlan& plan) {
  if (plan.private_tmp != nullptr || plan.cover_count > 0) {
    // Private first, so that nothing mounted here reaches the node's own namespace.
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      fail_helper(plan, errno);
    }
    if (plan.private_tmp != nullptr &&
        ::mount(plan.private_tmp, "/tmp", nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      fail_helper(plan, errno);
    }
    if (plan.cover_count > 0) {
      if (const int err = cover_and_reveal(plan); err != 0) fail_helper(plan, err);
    }
  }
  if (plan.umask >= 0) ::umask(static_cast<mode_t>(plan.umask));
  if (plan.memlock_bytes > 0) {
    const rlimit locked{plan.memlock_bytes, plan.memlock_bytes};
    if (::setrlimit(RLIMIT_MEMLOCK, &locked) != 0) {
      report(plan.report_fd, 'l', errno);
      ::_exit(127);
    }
  }
  if (plan.run_as) {
    if (const int err = drop_to(plan); err != 0) fail_helper(plan, err);
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

// A cover's plan, made before forking.
struct CoverPlan {
  std::vector<std::string> covers;
  std::vector<std::string> dirs;
  std::vector<std::string> paths;
  std::string kinds;
  std::vector<int> fds;  // the helper's, filled in after the fork
};

Status plan_cover(const std::filesystem::path& cover,
                  const std::vector<std::filesystem::path>& reveal, CoverPlan& plan) {
  const auto base = cover.lexically_normal();
  plan.covers.push_back(base.string());
  for (const auto& path : reveal) {
    if (!lies_below(path, cover)) {
      return fail(Error::internal(
          fmt::format("{} is not below {}, which covers it", path.string(), cover.string())));
    }
    const auto target = path.lexically_normal();
    const auto relative = target.lexically_relative(base);
    auto dir = base;
    for (auto part = relative.begin(); std::next(part) != relative.end(); ++part) {
      dir /= *part;
      if (std::ranges::find(plan.dirs, dir.string()) == plan.dirs.end()) {
        plan.dirs.push_back(dir.string());
      }
    }
    struct stat st {};
    if (::stat(target.c_str(), &st) != 0) {
      return fail(Error::internal(
          fmt::format("cannot reveal {}: {}", target.string(), std::strerror(errno))));
    }
    plan.paths.push_back(target.string());
    plan.kinds.push_back(S_ISDIR(st.st_mode) ? 'd' : 'f');
    plan.fds.push_back(-1);
  }
  return {};
}

std::vector<const char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<const char*> out;
  out.reserve(strings.size());
  for (const auto& text : strings) out.push_back(text.c_str());
  return out;
}

}  // namespace

Result<pid_t> spawn_detached(const DetachedRun& run) {
  if (run.argv.empty()) return fail(Error::internal("spawn_detached: nothing to run"));
  if (run.run_as && run.user_namespace) {
    return fail(Error::internal("spawn_detached: a user namespace or a user, not both"));
  }
  const std::string& name = run.argv.front();
  const auto executable = executable_path(name);
  if (!executable) return fail(Error::internal(fmt::format("{} cannot be run: not found", name)));
  CoverPlan cover;
  for (const auto& covered : run.covers) {
    GPURENT_CHECK(plan_cover(covered.directory, covered.reveal, cover));
  }
  const auto covers = c_strings(cover.covers);
  const auto cover_dirs = c_strings(cover.dirs);
  const auto reveal_paths = c_strings(cover.paths);
  const std::vector<gid_t> groups =
      run.run_as ? std::vector<gid_t>(run.run_as->groups.begin(), run.run_as->groups.end())
                 : std::vector<gid_t>();
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
  std::vector<std::string> env = run.environment ? *run.environment : environment_with({});
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
                        .covers = covers.data(),
                        .cover_count = covers.size(),
                        .cover_dirs = cover_dirs.data(),
                        .cover_dir_count = cover_dirs.size(),
                        .reveal_paths = reveal_paths.data(),
                        .reveal_kinds = cover.kinds.c_str(),
                        .reveal_fds = cover.fds.data(),
                        .reveal_count = reveal_paths.size(),
                        .run_as = run.run_as.has_value(),
                        .uid = run.run_as ? run.run_as->uid : 0,
                        .gid = run.run_as ? run.run_as->gid : 0,
                        .groups = groups.data(),
                        .group_count = groups.size(),
                        .memlock_bytes = run.memlock_bytes,
                        .umask = run.umask ? static_cast<int>(*run.umask) : -1,
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
  bool limit_refused = false;
  for (;;) {
    SpawnReport message{};
    const ssize_t got = ::read(reports[0], &message, sizeof message);
    if (got < 0 && errno == EINTR) continue;
    if (got != static_cast<ssize_t>(sizeof message)) break;
    (message.kind == 'p' ? helper : err) = message.value;
    limit_refused = limit_refused || message.kind == 'l';
  }
  close_all();
  if (limit_refused) {
    return fail(Error::internal(fmt::format(
        "{} may not lock {} MiB of memory: {} (raising the limit needs CAP_SYS_RESOURCE)", name,
        run.memlock_bytes >> 20, std::strerror(err))));
  }
  if (err != 0 || helper <= 0) {
    return fail(Error::internal(
        fmt::format("{} cannot be run: {}", name, std::strerror(err != 0 ? err : ECHILD))));
  }
  return helper;
}

}  // namespace gpurent::agent
