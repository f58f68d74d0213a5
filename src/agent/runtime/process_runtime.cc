#include "agent/runtime/process_runtime.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "agent/files.h"
#include "agent/runtime/volumes.h"
#include "agent/runtime/workdir.h"
#include "common/json.h"

namespace gpurent::agent {
namespace {

// The shim needs one fork and two execs to report; seconds mean the host is badly overloaded, and
// then the run is left kStarting rather than blocking the reconcile loop any longer.
constexpr auto kShimReadyTimeout = std::chrono::seconds(10);
constexpr std::string_view kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

// Where a process finds a volume: processes share the host's file system, so a volume cannot
// appear at its mount path itself; it appears at that path inside the instance directory (the
// working directory and HOME), as a link to the volume's data.
std::filesystem::path link_path(const std::filesystem::path& home,
                                const model::VolumeMount& mount) {
  return home / std::string_view(mount.mount_path).substr(1);  // validated: absolute
}

// Prepares the spec's volumes and links each into the instance directory. A link left by an
// earlier run is replaced; anything else at the path is the tenant's and is not touched (the
// start fails instead).
Result<std::vector<PreparedVolume>> link_volumes(const std::filesystem::path& data_dir,
                                                 const std::filesystem::path& home,
                                                 const model::WorkloadSpec& spec) {
  GPURENT_TRY(volumes, prepare_volumes(data_dir, spec));
  for (const auto& volume : volumes) {
    const auto link = link_path(home, volume.mount);
    std::error_code ec;
    std::filesystem::create_directories(link.parent_path(), ec);
    std::error_code missing;  // not_found is the usual case: nothing there yet
    const auto status = std::filesystem::symlink_status(link, missing);
    if (std::filesystem::is_symlink(status)) {
      std::filesystem::remove(link, ec);
    } else if (std::filesystem::exists(status)) {
      return fail(Error::conflict(
          "mount_path_taken",
          fmt::format("cannot mount volume {} at {}: the instance directory has a file there",
                      volume.mount.volume_id, volume.mount.mount_path)));
    }
    if (!ec) std::filesystem::create_directory_symlink(volume.dir, link, ec);
    if (ec) {
      return fail(Error::internal(fmt::format(
          "cannot link volume {} at {}: {}", volume.mount.volume_id, link.string(), ec.message())));
    }
  }
  return volumes;
}

// "<instance_id>.<run>" back to its key; nothing for names the runtime did not make.
std::optional<WorkloadKey> parse_dir_name(std::string_view name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  WorkloadKey key{std::string(name.substr(0, dot)), 0};
  const std::string_view run = name.substr(dot + 1);
  const auto [ptr, ec] = std::from_chars(run.data(), run.data() + run.size(), key.run);
  if (ec != std::errc() || ptr != run.data() + run.size() || key.run < 0 ||
      !valid_instance_id(key.instance_id)) {
    return std::nullopt;
  }
  return key;
}

// A directory only its owner may enter and nobody else may list; made if missing.
Status make_private_directory(const std::filesystem::path& dir, std::filesystem::perms perms) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec) std::filesystem::permissions(dir, perms, ec);
  if (ec)
    return fail(Error::internal(fmt::format("cannot create {}: {}", dir.string(), ec.message())));
  return {};
}

// Homes used to live in <data_dir>/instances/; they move beside it, outside the agent's files.
void move_old_homes(const std::filesystem::path& data_dir, const std::filesystem::path& instances) {
  const auto old_dir = data_dir / "instances";
  std::error_code ec;
  if (!std::filesystem::is_directory(old_dir, ec) || old_dir == instances) return;
  for (const auto& item : std::filesystem::directory_iterator(old_dir, ec)) {
    const auto target = instances / item.path().filename();
    std::error_code moved;
    if (!std::filesystem::exists(target, moved))
      std::filesystem::rename(item.path(), target, moved);
    if (moved) {
      spdlog::error("instance_home_not_moved from={} to={} error=\"{}\"", item.path().string(),
                    target.string(), moved.message());
    }
  }
  std::filesystem::remove(old_dir, ec);  // only when empty
}

struct Spawned {
  pid_t pid = 0;
  uint64_t start_time = 0;
};

// Forks and execs the shim, then waits (bounded) for its first word on the ready pipe.
Result<Spawned> spawn_shim(const std::string& executable, const std::filesystem::path& dir) {
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    return fail(Error::internal(fmt::format("pipe2: {}", std::strerror(errno))));
  }
  std::string dir_arg = dir.string();
  std::string fd_arg = std::to_string(kShimReadyFd);
  std::string shim_arg = "__shim";
  std::string exe = executable;
  char* argv[] = {exe.data(), shim_arg.data(), dir_arg.data(), fd_arg.data(), nullptr};
  // The shim is this binary, whose allocator asks for huge pages (src/malloc_conf.cc); a shim, one
  // per workload, needs only a few small pages, so it runs without them.
  // The workload does not inherit this: its environment is built from its spec (shim.cc).
  std::vector<char*> envp;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "MALLOC_CONF=", 12) != 0) envp.push_back(*entry);
  }
  std::string malloc_conf = "MALLOC_CONF=thp:never,metadata_thp:disabled";
  envp.push_back(malloc_conf.data());
  envp.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid == 0) {
    // The agent has other threads: only async-signal-safe calls until exec. The agent's signal
    // mask (run_agent blocks SIGINT/SIGTERM for sigwait) must not leak into the workload.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (ready[1] == kShimReadyFd) {
      ::fcntl(kShimReadyFd, F_SETFD, 0);
    } else {
      ::dup2(ready[1], kShimReadyFd);  // dup2 leaves the copy without FD_CLOEXEC
    }
    // The agent's stdio (a terminal, a journal pipe, a test harness's pipe) is not the shim's: a
    // long-lived shim holding it open would keep whoever reads it from seeing EOF.
    const int null_fd = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd <= 2; ++fd) ::dup2(null_fd, fd);
    // Descriptors that libraries opened without O_CLOEXEC (log files, sockets) stay here.
    ::close_range(kShimReadyFd + 1, ~0U, 0);
    ::execve(argv[0], argv, envp.data());
    const int err = errno;
    char message[1 + sizeof err];
    message[0] = kShimExecFailed;
    std::memcpy(message + 1, &err, sizeof err);
    [[maybe_unused]] ssize_t ignored = ::write(kShimReadyFd, message, sizeof message);
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::close(ready[1]);
  if (pid < 0) {
    ::close(ready[0]);
    return fail(Error::internal(fmt::format("fork: {}", std::strerror(fork_errno))));
  }
  // Read now, while the child cannot have been reaped: the start time is fixed at fork.
  const auto stat = read_proc_stat(pid);
  Spawned spawned{pid, stat ? stat->start_time : 0};

  std::string reply;
  const auto deadline = std::chrono::steady_clock::now() + kShimReadyTimeout;
  while (reply.empty() || (reply.front() == kShimExecFailed && reply.size() < 1 + sizeof(int))) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      spdlog::warn(
          "shim_slow dir={} pid={} waited_ms={}", dir.string(), pid,
          std::chrono::duration_cast<std::chrono::milliseconds>(kShimReadyTimeout).count());
      break;
    }
    pollfd pfd{ready[0], POLLIN, 0};
    const int polled = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (polled < 0 && errno == EINTR) continue;
    if (polled <= 0) continue;
    char buffer[16];
    const ssize_t n = ::read(ready[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      break;  // the shim ended before it was ready; its exit record says why, or poll()
              // will report it vanished
    reply.append(buffer, static_cast<size_t>(n));
  }
  ::close(ready[0]);
  if (!reply.empty() && reply.front() == kShimExecFailed && reply.size() >= 1 + sizeof(int)) {
    int err = 0;
    std::memcpy(&err, reply.data() + 1, sizeof err);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return fail(Error::internal(
        fmt::format("cannot execute the shim {}: {}", executable, std::strerror(err))));
  }
  return spawned;
}

}  // namespace

std::filesystem::path default_instances_dir(const std::filesystem::path& data_dir) {
  const auto absolute = std::filesystem::absolute(data_dir).lexically_normal();
  const auto name =
      absolute.has_filename() ? absolute.filename() : absolute.parent_path().filename();
  return absolute.parent_path() / (name.string() + "-instances");
}

Result<std::unique_ptr<ProcessRuntime>> ProcessRuntime::open(RuntimeOptions options) {
  std::error_code ec;
  // Absolute and without links: sandboxes hide and bind these paths by name.
  options.data_dir = std::filesystem::weakly_canonical(std::filesystem::absolute(options.data_dir));
  if (options.instances_dir.empty())
    options.instances_dir = default_instances_dir(options.data_dir);
  using std::filesystem::perms;
  // It holds every run's records (their environments) and the node's credential: the agent's alone.
  GPURENT_CHECK(make_private_directory(options.data_dir, perms::owner_all));
  GPURENT_CHECK(make_private_directory(options.data_dir / "workloads", perms::owner_all));
  // Every instance's user passes through it, none may list it.
  GPURENT_CHECK(make_private_directory(options.instances_dir,
                                       perms::owner_all | perms::group_exec | perms::others_exec));
  options.instances_dir = std::filesystem::weakly_canonical(options.instances_dir);
  move_old_homes(options.data_dir, options.instances_dir);
  std::unique_ptr<ProcessRuntime> runtime(new ProcessRuntime(std::move(options)));
  if (runtime->options_.sandbox) {
    GPURENT_TRY(users,
                WorkloadUsers::open(runtime->options_.data_dir, runtime->options_.sandbox->ids));
    runtime->users_ = std::make_shared<WorkloadUsers>(std::move(users));
  }
  std::vector<std::filesystem::path> dirs;
  for (const auto& item :
       std::filesystem::directory_iterator(runtime->options_.data_dir / "workloads", ec)) {
    if (item.is_directory(ec)) dirs.push_back(item.path());
  }
  if (ec) return fail(Error::internal(fmt::format("cannot list workloads: {}", ec.message())));
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) runtime->adopt(dir);
  runtime->drop_unstarted();
  return runtime;
}

ProcessRuntime::ProcessRuntime(RuntimeOptions options) : options_(std::move(options)) {
  // Read once here: getenv races with any setenv on other threads, the reconcile loop's hot path
  // should not depend on that.
  const char* path = std::getenv("PATH");
  agent_path_ = path && *path ? path : std::string(kDefaultPath);
}

ProcessRuntime::~ProcessRuntime() = default;

std::filesystem::path ProcessRuntime::workload_dir(const WorkloadKey& key) const {
  return options_.data_dir / "workloads" / fmt::format("{}.{}", key.instance_id, key.run);
}

std::filesystem::path ProcessRuntime::instance_dir(std::string_view instance_id) const {
  return options_.instances_dir / std::string(instance_id);
}

void ProcessRuntime::adopt(const std::filesystem::path& dir) {
  const auto key = parse_dir_name(dir.filename().string());
  if (!key) {
    spdlog::warn("workload_dir_ignored dir={} reason=\"not <instance_id>.<run>\"", dir.string());
    return;
  }
  if (entries_.size() >= kMaxWorkloads) {
    spdlog::error("workload_dir_ignored dir={} reason=\"more than {} workloads\"", dir.string(),
                  kMaxWorkloads);
    return;
  }
  Entry entry;
  entry.info.key = *key;
  entry.info.log_path = dir / kLogFile;
  entry.info.phase = model::WorkloadPhase::kRunning;
  entry.dir = dir;
  const auto now = std::chrono::steady_clock::now();
  if (auto launch = read_launch(dir)) entry.tenant_id = std::move(launch->tenant_id);
  if (auto state = read_shim_state(dir)) {
    entry.shim_pid = state->pid;
    entry.shim_start_time = state->start_time;
  } else {
    // A start cut short (see the header): the shim may still record itself until the launch is
    // kShimReadyTimeout old. (A shim that failed before recording itself left an exit record,
    // which refresh() reads at once.)
    std::error_code ec;
    const auto written = std::filesystem::last_write_time(dir / kLaunchFile, ec);
    const auto age = ec ? kShimReadyTimeout
                        : std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::filesystem::file_time_type::clock::now() - written);
    entry.info.phase = model::WorkloadPhase::kStarting;
    // Clamped: a launch file from the future (the clock was set back) waits no longer.
    entry.shim_expected_until =
        now + std::clamp<std::chrono::milliseconds>(kShimReadyTimeout - age, {}, kShimReadyTimeout);
  }
  auto& adopted = entries_.emplace(*key, std::move(entry)).first->second;
  refresh(adopted, now);
  spdlog::info("workload_adopted instance={} run={} pid={} phase={}", key->instance_id, key->run,
               adopted.shim_pid, model::to_string(adopted.info.phase));
}

void ProcessRuntime::drop_unstarted() {
  std::erase_if(entries_, [](const auto& item) {
    const Entry& entry = item.second;
    if (!entry.never_started) return false;
    spdlog::warn(
        "workload_never_started instance={} run={} reason=\"the agent stopped while starting it; "
        "started again if still desired\"",
        entry.info.key.instance_id, entry.info.key.run);
    std::error_code ec;
    std::filesystem::remove_all(entry.dir, ec);
    return true;
  });
}

Status ProcessRuntime::start(const model::WorkloadSpec& spec) {
  if (auto valid = validate_workload(spec); !valid) return valid;
  if (!spec.image.empty()) {
    return fail(Error::invalid(
        "invalid_workload", "the process runtime cannot run an image; use the container runtime"));
  }
  WorkloadKey key{spec.instance_id, spec.run};
  GPURENT_CHECK(admit_workload(key, entries_.contains(key), entries_.size()));
  GPURENT_CHECK(admit_tenant(spec));

  const auto dir = workload_dir(key);
  const auto home = instance_dir(spec.instance_id);
  std::error_code ec;
  // A directory the runtime does not track is debris of a start that failed half-way.
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (!ec) std::filesystem::create_directories(home, ec);
  if (ec) {
    return fail(Error::internal(fmt::format("cannot create the directories of {}.{}: {}",
                                            key.instance_id, key.run, ec.message())));
  }
  const auto undo = [&](Error error) {
    std::filesystem::remove_all(dir, ec);
    if (options_.sandbox && options_.sandbox->cgroups) {
      [[maybe_unused]] auto removed = options_.sandbox->cgroups->remove(dir.filename().string());
    }
    return fail(std::move(error));
  };

  Launch launch{spec.command, platform_env(spec), home.string(), spec.tenant_id, {}};
  // A sandbox binds each volume where an unsandboxed run finds a link to it.
  auto volumes = options_.sandbox ? prepare_volumes(options_.data_dir, spec)
                                  : link_volumes(options_.data_dir, home, spec);
  if (!volumes) return undo(std::move(volumes).error());
  if (options_.sandbox) {
    auto sandbox = prepare_sandbox(spec, home, *volumes);
    if (!sandbox) return undo(std::move(sandbox).error());
    launch.sandbox = std::move(*sandbox);
  }
  if (!spec.workdir.empty()) {
    std::optional<WorkdirUser> user;
    if (launch.sandbox) user = WorkdirUser{launch.sandbox->uid, launch.sandbox->gid};
    auto unpacked = unpack_workdir(options_.data_dir, spec.instance_id, spec.workdir, home, user);
    if (!unpacked) return undo(std::move(unpacked).error());
  }
  if (!volumes->empty()) {
    launch.env["GPURENT_VOLUMES"] = volumes_env(*volumes, [&](const PreparedVolume& volume) {
      return link_path(home, volume.mount).string();
    });
  }
  launch.env.try_emplace("HOME", home.string());
  launch.env.try_emplace("PATH", agent_path_);
  // It holds the run's environment, service token included: the agent's alone.
  if (auto written = write_file_atomic(dir / kLaunchFile, launch_json(launch).dump(), 0600);
      !written) {
    return undo(std::move(written).error());
  }

  auto spawned = spawn_shim(options_.shim_executable, dir);
  if (!spawned) return undo(std::move(spawned).error());
  Entry entry;
  entry.tenant_id = spec.tenant_id;
  entry.info.key = key;
  entry.info.log_path = dir / kLogFile;
  entry.dir = dir;
  entry.shim_pid = spawned->pid;
  entry.shim_start_time = spawned->start_time;
  auto& started = entries_.emplace(key, std::move(entry)).first->second;
  refresh(started, std::chrono::steady_clock::now());
  spdlog::info("workload_started instance={} run={} pid={} gpus={} command=\"{}\"", key.instance_id,
               key.run, spawned->pid, launch.env["CUDA_VISIBLE_DEVICES"],
               fmt::join(spec.command, " "));
  return {};
}

Status ProcessRuntime::admit_tenant(const model::WorkloadSpec& spec) const {
  if (options_.sandbox) return {};
  for (const auto& [key, entry] : entries_) {
    if (entry.info.phase == model::WorkloadPhase::kExited || entry.tenant_id == spec.tenant_id) {
      continue;
    }
    return fail(Error::conflict(
        "tenant_isolation_unavailable",
        fmt::format("this node cannot isolate tenants' processes (its agent is not root or the "
                    "host has no namespaces), so it runs one tenant's at a time; {} runs "
                    "another tenant's work",
                    key.instance_id)));
  }
  return {};
}

Result<Sandbox> ProcessRuntime::prepare_sandbox(const model::WorkloadSpec& spec,
                                                const std::filesystem::path& home,
                                                const std::vector<PreparedVolume>& volumes) {
  GPURENT_TRY(uid, users_->uid_of_instance(spec.instance_id));
  GPURENT_TRY(gid, users_->gid_of_tenant(id_owner(spec)));
  Sandbox sandbox{
      uid, gid, home.string(), {options_.data_dir.string(), options_.instances_dir.string()},
      {},  {}};
  struct stat st {};
  if (::lstat(home.c_str(), &st) != 0 || st.st_uid != uid || st.st_gid != gid) {
    // A new home, or one from before the sandbox (root's files): the instance's user's now.
    GPURENT_CHECK(chown_tree(home, uid, gid));
  }
  if (::chmod(home.c_str(), 0700) != 0) {
    return fail(Error::internal(fmt::format("chmod {}: {}", home.string(), std::strerror(errno))));
  }
  for (const auto& volume : volumes) {
    GPURENT_CHECK(share_volume_with_group(volume.dir, gid));
    sandbox.binds.push_back({volume.dir.string(), link_path(home, volume.mount).string()});
  }
  if (const auto& cgroups = options_.sandbox->cgroups) {
    GPURENT_TRY(dirs, cgroups->create(fmt::format("{}.{}", spec.instance_id, spec.run),
                                      {spec.cpu, int64_t{spec.memory_gb} << 30}));
    sandbox.cgroups = std::move(dirs);
  }
  return sandbox;
}

void ProcessRuntime::stop(const WorkloadKey& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return;
  Entry& entry = it->second;
  if (entry.info.phase == model::WorkloadPhase::kExited || entry.info.stop_requested) return;
  entry.info.stop_requested = true;
  entry.kill_at = std::chrono::steady_clock::now() + options_.stop_grace;
  signal_group(entry, SIGTERM);
  spdlog::info("workload_stopping instance={} run={} pid={} grace_ms={}", key.instance_id, key.run,
               entry.shim_pid, options_.stop_grace.count());
}

Status ProcessRuntime::forget(const WorkloadKey& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return {};
  if (it->second.info.phase != model::WorkloadPhase::kExited) {
    return fail(Error::conflict("workload_running", fmt::format("workload {}.{} has not exited",
                                                                key.instance_id, key.run)));
  }
  if (options_.sandbox && options_.sandbox->cgroups) {
    GPURENT_CHECK(options_.sandbox->cgroups->remove(it->second.dir.filename().string()));
  }
  std::error_code ec;
  std::filesystem::remove_all(it->second.dir, ec);
  if (ec) {
    return fail(Error::internal(
        fmt::format("cannot delete {}: {}", it->second.dir.string(), ec.message())));
  }
  entries_.erase(it);
  spdlog::info("workload_forgotten instance={} run={}", key.instance_id, key.run);
  return {};
}

void ProcessRuntime::poll() {
  const auto now = std::chrono::steady_clock::now();
  for (auto& [key, entry] : entries_) refresh(entry, now);
  drop_unstarted();
}

std::vector<Workload> ProcessRuntime::workloads() const { return workloads_of(entries_); }

const Workload* ProcessRuntime::find(const WorkloadKey& key) const {
  return find_workload(entries_, key);
}

std::optional<ProcessRuntime::SteadyTime> ProcessRuntime::next_deadline() const {
  std::optional<SteadyTime> next;
  for (const auto& [key, entry] : entries_) {
    if (entry.info.phase == model::WorkloadPhase::kExited || !entry.kill_at || entry.killed) {
      continue;
    }
    if (!next || *entry.kill_at < *next) next = entry.kill_at;
  }
  return next;
}

bool ProcessRuntime::shim_alive(Entry& entry) {
  if (entry.shim_pid == 0) return false;
  // A different start time means the pid now belongs to another process: the shim is gone.
  if (still_running(entry.shim_pid, entry.shim_start_time)) return true;
  // Reap the zombie when the shim is our child (started by this runtime); for a re-adopted shim,
  // whose parent is init or a subreaper, waitpid answers ECHILD and changes nothing. The start
  // time check makes sure the pid still names that shim.
  if (const auto stat = read_proc_stat(entry.shim_pid);
      stat && stat->start_time == entry.shim_start_time) {
    ::waitpid(entry.shim_pid, nullptr, WNOHANG);
  }
  entry.shim_pid = 0;
  return false;
}

void ProcessRuntime::refresh(Entry& entry, SteadyTime now) {
  if (entry.shim_expected_until) {
    if (auto state = read_shim_state(entry.dir)) {
      entry.shim_pid = state->pid;
      entry.shim_start_time = state->start_time;
      entry.shim_expected_until.reset();
      // A stop asked for while the shim was unknown reaches it now.
      if (entry.info.stop_requested && !entry.killed) signal_group(entry, SIGTERM);
    } else if (read_exit_record(entry.dir)) {
      entry.shim_expected_until.reset();  // it failed before recording itself: read below
    } else {
      entry.never_started = now >= *entry.shim_expected_until;
      return;
    }
  }
  // Liveness first, then the exit record: a shim writes its record before it dies, so "dead and
  // still no record" is conclusive, while the other order could miss a record written in between.
  const bool alive = shim_alive(entry);
  if (entry.info.phase == model::WorkloadPhase::kExited) return;
  auto record = read_exit_record(entry.dir);
  if (record) {
    mark_exited(entry, std::move(*record));
    return;
  }
  if (record.error().code != "file_not_found") {
    mark_exited(entry, {kKilledExitCode, "unreadable exit record: " + record.error().message});
    return;
  }
  if (!alive) {
    ExitRecord vanished{kKilledExitCode,
                        entry.killed
                            ? fmt::format("killed with SIGKILL after the {} ms stop grace period",
                                          options_.stop_grace.count())
                            : "the shim ended without recording an exit status (SIGKILL?)"};
    // Recorded so that every later look (a restarted agent included) gives the same answer.
    if (auto written = write_exit_record(entry.dir, vanished); !written) {
      spdlog::error("exit_record_failed dir={} error=\"{}\"", entry.dir.string(),
                    written.error().message);
    }
    mark_exited(entry, std::move(vanished));
    return;
  }
  if (entry.info.phase == model::WorkloadPhase::kStarting &&
      std::filesystem::exists(entry.dir / kStateFile)) {
    entry.info.phase = model::WorkloadPhase::kRunning;
  }
  if (entry.kill_at && !entry.killed && now >= *entry.kill_at) {
    signal_group(entry, SIGKILL);
    entry.killed = true;
    spdlog::warn("workload_killed instance={} run={} pid={} reason=\"stop grace of {} ms over\"",
                 entry.info.key.instance_id, entry.info.key.run, entry.shim_pid,
                 options_.stop_grace.count());
  }
}

void ProcessRuntime::signal_group(Entry& entry, int signal) {
  if (!shim_alive(entry)) return;
  // The shim leads its process group (setsid), which holds the workload and its children. Before
  // the shim's setsid (only while start() waited in vain for it) there is no such group yet, and
  // the shim alone is signalled.
  if (::kill(-entry.shim_pid, signal) != 0 && errno == ESRCH) ::kill(entry.shim_pid, signal);
}

void ProcessRuntime::mark_exited(Entry& entry, ExitRecord record) {
  entry.info.phase = model::WorkloadPhase::kExited;
  entry.info.exit_code = record.exit_code;
  entry.info.message = std::move(record.message);
  entry.info.never_started = record.never_started;
  spdlog::info("workload_exited instance={} run={} exit_code={} message=\"{}\"",
               entry.info.key.instance_id, entry.info.key.run, record.exit_code,
               entry.info.message);
}

}  // namespace gpurent::agent
