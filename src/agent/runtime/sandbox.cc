#include "agent/runtime/sandbox.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace gpurent::agent {
namespace {

constexpr size_t kMaxSandboxPaths = 64;
constexpr size_t kMaxPathBytes = 4096;

std::string errno_text(std::string_view what) {
  return fmt::format("{}: {}", what, std::strerror(errno));
}

Status mount_or_fail(const char* source, const std::string& target, const char* type,
                     unsigned long flags, const char* data) {
  if (::mount(source, target.c_str(), type, flags, data) == 0) return {};
  return fail(
      Error::internal(errno_text(fmt::format("mount {} on {}", type ? type : source, target))));
}

// An empty directory in place of `path`, owned by root: nobody but root can add to it, and a
// listing shows only what the view puts there (the run's own home on its way).
Status cover(const std::string& path) {
  return mount_or_fail("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m");
}

bool reachable_by(const struct stat& st, uint32_t uid, uint32_t gid) {
  if (st.st_uid == uid) return st.st_mode & S_IXUSR;
  if (st.st_gid == gid) return st.st_mode & S_IXGRP;
  return st.st_mode & S_IXOTH;
}

// Makes every directory on the way to `path` exist and be reachable by the sandbox's user, then
// binds the directory opened as `source` on it. A missing directory can only be one hidden by a
// directory this view covered (the real one exists), so it is made in that empty cover.
Status reveal(const std::string& path, int source, const Sandbox& sandbox) {
  std::string at;
  for (const auto& part : std::filesystem::path(path).relative_path()) {
    at += "/" + part.string();
    struct stat st {};
    if (::lstat(at.c_str(), &st) != 0) {
      if (errno != ENOENT || ::mkdir(at.c_str(), 0755) != 0) {
        return fail(Error::internal(errno_text("make " + at)));
      }
      continue;
    }
    if (S_ISLNK(st.st_mode)) {
      return fail(Error::internal(fmt::format("{} is a symbolic link", at)));
    }
    if (!reachable_by(st, sandbox.uid, sandbox.gid) && at != path) GPURENT_CHECK(cover(at));
  }
  return mount_or_fail(fmt::format("/proc/self/fd/{}", source).c_str(), path, nullptr,
                       MS_BIND | MS_REC, nullptr);
}

// Opens (making them, owned by the sandbox's user) the directories from the home down to a bind's
// target without following a symbolic link: the home is the tenant's, and a link there must not
// point a bind (made as root) anywhere else.
Result<int> open_bind_target(const Sandbox& sandbox, const SandboxBind& bind) {
  int dir = ::open(sandbox.home.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return fail(Error::internal(errno_text("open " + sandbox.home)));
  const auto relative = std::filesystem::path(bind.target).lexically_relative(sandbox.home);
  for (const auto& part : relative) {
    const std::string name = part.string();
    if (name == ".." || name == "." || name.empty()) {
      ::close(dir);
      return fail(Error::internal(fmt::format("{} is not below {}", bind.target, sandbox.home)));
    }
    if (::mkdirat(dir, name.c_str(), 0755) == 0) {
      ::fchownat(dir, name.c_str(), sandbox.uid, sandbox.gid, AT_SYMLINK_NOFOLLOW);
    }
    const int next = ::openat(dir, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    ::close(dir);
    if (next < 0) {
      return fail(Error::internal(errno_text(
          fmt::format("cannot mount a volume at {}: the instance has a file there", bind.target))));
    }
    dir = next;
  }
  return dir;
}

Status bind_volume(const Sandbox& sandbox, const SandboxBind& bind, int source) {
  GPURENT_TRY(target, open_bind_target(sandbox, bind));
  auto bound =
      mount_or_fail(fmt::format("/proc/self/fd/{}", source).c_str(),
                    fmt::format("/proc/self/fd/{}", target), nullptr, MS_BIND | MS_REC, nullptr);
  ::close(target);
  return bound;
}

Result<int> open_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail(Error::internal(errno_text("open " + path)));
  return fd;
}

Result<std::vector<std::string>> absolute_paths(const Json& json, std::string_view key) {
  GPURENT_TRY(paths, optional_string_list(json, key, kMaxSandboxPaths, kMaxPathBytes));
  for (const auto& path : paths) {
    if (path.empty() || path.front() != '/') {
      return fail(
          Error::invalid("invalid_sandbox", fmt::format("{}: '{}' is not absolute", key, path)));
    }
  }
  return paths;
}

void forward_to_namespace(int signal) {
  ::kill(-1, signal);  // from PID 1: every other process of the namespace
}

}  // namespace

Json sandbox_json(const Sandbox& sandbox) {
  Json binds = Json::array();
  for (const auto& bind : sandbox.binds) {
    binds.push_back({{"source", bind.source}, {"target", bind.target}});
  }
  return {{"uid", sandbox.uid},       {"gid", sandbox.gid},        {"home", sandbox.home},
          {"hidden", sandbox.hidden}, {"binds", std::move(binds)}, {"cgroups", sandbox.cgroups}};
}

Result<Sandbox> parse_sandbox(const Json& json) {
  if (!json.is_object()) return fail(Error::invalid("invalid_sandbox", "sandbox: not an object"));
  Sandbox sandbox;
  GPURENT_TRY(uid, required_int(json, "uid", 1, UINT32_MAX - 1));
  GPURENT_TRY(gid, required_int(json, "gid", 1, UINT32_MAX - 1));
  GPURENT_TRY(home, required_string(json, "home", kMaxPathBytes));
  GPURENT_TRY(hidden, absolute_paths(json, "hidden"));
  GPURENT_TRY(cgroups, absolute_paths(json, "cgroups"));
  sandbox.uid = static_cast<uint32_t>(uid);
  sandbox.gid = static_cast<uint32_t>(gid);
  sandbox.home = std::move(home);
  sandbox.hidden = std::move(hidden);
  sandbox.cgroups = std::move(cgroups);
  if (sandbox.home.empty() || sandbox.home.front() != '/') {
    return fail(Error::invalid("invalid_sandbox", "home: not absolute"));
  }
  const auto binds = json.find("binds");
  if (binds != json.end()) {
    if (!binds->is_array() || binds->size() > kMaxSandboxPaths) {
      return fail(Error::invalid("invalid_sandbox", "binds: not a list"));
    }
    for (const auto& item : *binds) {
      if (!item.is_object()) return fail(Error::invalid("invalid_sandbox", "binds: not objects"));
      GPURENT_TRY(source, required_string(item, "source", kMaxPathBytes));
      GPURENT_TRY(target, required_string(item, "target", kMaxPathBytes));
      sandbox.binds.push_back({std::move(source), std::move(target)});
    }
  }
  return sandbox;
}

Status probe_sandbox() {
  if (::geteuid() != 0) {
    return fail(Error{ErrorKind::kUnavailable, "sandbox_unavailable",
                      "the agent does not run as root, so it cannot run workloads as other users"});
  }
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return fail(Error::internal(errno_text("pipe2")));
  // The probe makes what a sandbox makes: PID, mount and IPC namespaces and a /proc in them.
  const pid_t pid = ::fork();
  if (pid == 0) {
    int failure = 0;
    if (::unshare(CLONE_NEWPID) != 0) failure = errno;
    if (failure == 0) {
      const pid_t init = ::fork();
      if (init == 0) {
        int code = 0;
        if (::unshare(CLONE_NEWNS | CLONE_NEWIPC) != 0 ||
            ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
            ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
          code = errno;
        }
        ::_exit(code);
      }
      int status = 0;
      if (init < 0) {
        failure = errno;
      } else if (::waitpid(init, &status, 0) == init) {
        failure = WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
      }
    }
    [[maybe_unused]] ssize_t ignored = ::write(report[1], &failure, sizeof failure);
    ::_exit(0);
  }
  ::close(report[1]);
  int failure = pid < 0 ? errno : EPIPE;
  if (pid > 0) {
    ssize_t n;
    while ((n = ::read(report[0], &failure, sizeof failure)) < 0 && errno == EINTR) {
    }
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  ::close(report[0]);
  if (failure == 0) return {};
  return fail(
      Error{ErrorKind::kUnavailable, "sandbox_unavailable",
            fmt::format("this host does not let the agent make PID and mount namespaces ({})",
                        std::strerror(failure))});
}

Status build_sandbox_view(const Sandbox& sandbox) {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return fail(Error::internal(errno_text("make the mounts private")));
  }
  // Opened before anything is covered: the view then binds what these name.
  GPURENT_TRY(home, open_path(sandbox.home));
  std::vector<int> sources;
  for (const auto& bind : sandbox.binds) {
    GPURENT_TRY(source, open_path(bind.source));
    sources.push_back(source);
  }
  GPURENT_CHECK(mount_or_fail("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr));
  for (const char* shared : {"/tmp", "/var/tmp", "/dev/shm"}) {
    struct stat st {};
    if (::stat(shared, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    GPURENT_CHECK(mount_or_fail("tmpfs", shared, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"));
  }
  for (const auto& path : sandbox.hidden) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;
    GPURENT_CHECK(cover(path));
  }
  GPURENT_CHECK(reveal(sandbox.home, home, sandbox));
  for (size_t i = 0; i < sandbox.binds.size(); ++i) {
    GPURENT_CHECK(bind_volume(sandbox, sandbox.binds[i], sources[i]));
  }
  ::close(home);
  for (const int source : sources) ::close(source);
  return {};
}

Status join_sandbox_cgroups(const Sandbox& sandbox) {
  for (const auto& cgroup : sandbox.cgroups) {
    const std::string procs = cgroup + "/cgroup.procs";
    const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    const bool joined = fd >= 0 && ::write(fd, "0", 1) == 1;
    const int error = errno;
    if (fd >= 0) ::close(fd);
    if (!joined) {
      return fail(Error::internal(fmt::format("join {}: {}", procs, std::strerror(error))));
    }
  }
  return {};
}

int drop_to_sandbox_user(uint32_t uid, uint32_t gid) {
  for (int cap = 0; cap <= 63; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return errno;
  }
  const gid_t groups[] = {gid};
  if (::syscall(SYS_setgroups, 1, groups) != 0) return errno;
  if (::syscall(SYS_setresgid, gid, gid, gid) != 0) return errno;
  if (::syscall(SYS_setresuid, uid, uid, uid) != 0) return errno;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  // Shared volumes stay writable by the tenant's other instances (their group).
  ::umask(0007);
  return 0;
}

void run_sandbox_init(pid_t workload, int status_fd) {
  // PID 1 gets only the signals it handles, from outside as from inside the namespace.
  struct sigaction forward {};
  forward.sa_handler = forward_to_namespace;
  for (int signal : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(signal, &forward, nullptr);
  for (;;) {
    int status = 0;
    const pid_t ended = ::waitpid(-1, &status, 0);
    if (ended < 0) {
      if (errno == EINTR) continue;
      ::_exit(1);  // no child left: cannot happen while the workload has not been reaped
    }
    if (ended == workload) {
      [[maybe_unused]] ssize_t ignored = ::write(status_fd, &status, sizeof status);
      ::_exit(0);
    }
  }
}

SandboxEntry::SandboxEntry(SandboxEntry&& other) noexcept
    : pid_namespace(std::exchange(other.pid_namespace, -1)),
      mount_namespace(std::exchange(other.mount_namespace, -1)),
      cgroup_procs(std::move(other.cgroup_procs)),
      uid(other.uid),
      gid(other.gid) {
  other.cgroup_procs.clear();
}

SandboxEntry::~SandboxEntry() {
  for (const int fd : cgroup_procs) ::close(fd);
  if (pid_namespace >= 0) ::close(pid_namespace);
  if (mount_namespace >= 0) ::close(mount_namespace);
}

Result<SandboxEntry> open_sandbox_entry(pid_t init, const Sandbox& sandbox) {
  SandboxEntry entry;
  entry.uid = sandbox.uid;
  entry.gid = sandbox.gid;
  const auto open_namespace = [&](std::string_view name) -> Result<int> {
    const std::string path = fmt::format("/proc/{}/ns/{}", init, name);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(Error::internal(errno_text("open " + path)));
    return fd;
  };
  GPURENT_TRY(pid_namespace, open_namespace("pid"));
  entry.pid_namespace = pid_namespace;
  GPURENT_TRY(mount_namespace, open_namespace("mnt"));
  entry.mount_namespace = mount_namespace;
  for (const auto& cgroup : sandbox.cgroups) {
    const std::string procs = cgroup + "/cgroup.procs";
    const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return fail(Error::internal(errno_text("open " + procs)));
    entry.cgroup_procs.push_back(fd);
  }
  return entry;
}

int join_sandbox(const SandboxEntry& entry) {
  if (::setns(entry.mount_namespace, CLONE_NEWNS) != 0) return errno;
  if (::setns(entry.pid_namespace, CLONE_NEWPID) != 0) return errno;
  for (const int fd : entry.cgroup_procs) {
    if (::write(fd, "0", 1) != 1) return errno;
  }
  return 0;
}

void enter_sandbox_as_user(const SandboxEntry& entry, std::string_view who) {
  const auto die = [who](std::string_view message) {
    [[maybe_unused]] ssize_t ignored = ::write(2, who.data(), who.size());
    ignored = ::write(2, message.data(), message.size());
    ::_exit(126);
  };
  if (join_sandbox(entry) != 0) die(": cannot enter the instance's sandbox\n");
  const pid_t command = ::fork();
  if (command < 0) die(": fork failed\n");
  if (command == 0) {
    if (drop_to_sandbox_user(entry.uid, entry.gid) != 0) {
      die(": cannot become the instance's user\n");
    }
    return;
  }
  ::close_range(0, ~0U, 0);
  int status = 0;
  while (::waitpid(command, &status, 0) < 0) {
    if (errno != EINTR) ::_exit(126);
  }
  if (WIFSIGNALED(status)) {
    ::signal(WTERMSIG(status), SIG_DFL);
    ::kill(::getpid(), WTERMSIG(status));
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 126);
}

}  // namespace gpurent::agent
