// The process runtime: runs each workload (one run of one instance) as a plain process under a
// shim, and tells the agent what runs and how each run ended.
//
// Supervision. start() forks and execs `<shim_executable> __shim <workload dir> <ready fd>`. The
// shim (run_workload_shim, shim.cc) leads its own session, records its pid and start time, starts
// the workload in its process group with stdout+stderr appended to the run's log, waits for it,
// and writes the exit status (exit code, or 128 + signal) atomically to the run's exit record. The
// shim is not tied to the agent: an agent that restarts re-adopts running shims from their state
// files, and a run that ended while no agent watched is found through its exit record. A shim
// that vanished without a record (SIGKILL to the group, which also takes the workload) is reported
// exited with 137.
//
// A start cut short. An agent that stopped inside start() (killed between creating the run's
// directory and the shim recording its state) leaves a directory without a state file or an exit
// record. The shim may still be starting (it records itself within moments of the fork), or
// never have been forked. Such a run is adopted as kStarting until its launch file is
// kShimReadyTimeout old; if the shim records itself by then it is adopted as any other, else the
// run never started: its directory is deleted and it is no longer listed, so the reconciler
// starts it again if it is still desired. It is not reported exited: nothing ran, and an exit
// would fail the instance and bill it as a run that ended by itself.
//
// Stopping. stop() sends SIGTERM to the run's process group and notes a deadline; poll() sends
// SIGKILL to the group once the deadline passes. Nothing here blocks for the grace period: the
// caller runs poll() at least by next_deadline(). PID reuse is guarded by comparing the start time
// in /proc/<pid>/stat with the recorded one before any signal is sent.
//
// Layout: <data_dir>/workloads/<instance_id>.<run>/ (see workload_files.h), deleted by forget();
// <instances_dir>/<instance_id>/ is the instance's working directory and HOME, kept across runs
// and never deleted here (a stopped instance keeps its disk). The instances directory is outside
// the data directory (the agent's identity, services and records), which is the agent's alone
// (mode 0700); homes from before that split (<data_dir>/instances/) are moved there at open().
//
// Isolation. With `sandbox` options (the agent is root and probe_sandbox() passed), every run is
// sandboxed (sandbox.h): its instance's own unprivileged user and its tenant's group
// (workload_users.h), its own PID, mount and IPC namespaces, the data and instances directories
// hidden but for its own home, its volumes bound below its home, and its cgroup limits (cgroups.h)
// when the host has them. The home is mode 0700, owned by the instance's user; a volume's data is
// owned by root and the tenant's group, mode 2770 (setgid: files made there stay the group's).
// Without, runs share the agent's user and view of the host, so nothing keeps one tenant's run
// from another's: the runtime then runs one tenant's runs at a time and refuses to start another
// tenant's while any runs (kConflict "tenant_isolation_unavailable").
//
// Environment of a workload: platform_env() (runtime.h), then HOME (the instance directory) and
// PATH (the agent's) unless the spec sets them. Nothing else is inherited from the agent. A command
// that cannot be executed exits with 127 (not found) or 126 (any other exec error), with the reason
// in the log and in the exit message.
//
// Bounds: at most kMaxWorkloads runs are tracked (running or exited but not yet forgotten); a
// command has at most kMaxCommandArgs arguments and the env at most kMaxEnvEntries entries. The
// log files are not capped here; the agent uploads them in bounded chunks.
//
// Thread-safety: none. One thread (the agent's reconciler) owns a ProcessRuntime. Two runtimes on
// one data directory at the same time are only meant for tests of re-adoption.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <compare>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/runtime/cgroups.h"
#include "agent/runtime/runtime.h"
#include "agent/runtime/volumes.h"
#include "agent/runtime/workload_files.h"
#include "agent/runtime/workload_users.h"
#include "common/result.h"
#include "model/agent_protocol.h"

namespace gpurent::agent {

struct SandboxOptions {
  IdRange ids = kDefaultWorkloadIds;  // the users and groups runs get
  std::optional<Cgroups> cgroups;     // none: the host offers no limits
};

struct RuntimeOptions {
  std::filesystem::path data_dir;
  // The executable that understands `__shim`: the gpurent binary itself, or the unit test binary.
  std::string shim_executable = "/proc/self/exe";
  std::chrono::milliseconds stop_grace{10000};
  // Where instances' homes live; empty: default_instances_dir(data_dir).
  std::filesystem::path instances_dir;
  std::optional<SandboxOptions> sandbox;  // none: runs are not isolated (see above)
};

// "<data_dir>-instances" beside the data directory.
std::filesystem::path default_instances_dir(const std::filesystem::path& data_dir);

class ProcessRuntime final : public Runtime {
 public:
  // Creates the directories and re-adopts every run recorded under data_dir.
  static Result<std::unique_ptr<ProcessRuntime>> open(RuntimeOptions options);
  ~ProcessRuntime() override;
  ProcessRuntime(const ProcessRuntime&) = delete;
  ProcessRuntime& operator=(const ProcessRuntime&) = delete;

  // Starts the run. Returns once the shim has started the workload's process (or recorded why it
  // could not), so the workload is kRunning or already kExited; the wait for the shim is bounded
  // by kShimReadyTimeout, after which the run stays kStarting until the shim catches up.
  // Errors: invalid spec (kInvalidArgument), the run already exists (kConflict), too many runs
  // (kUnavailable), or the shim cannot be started (kInternal).
  Status start(const model::WorkloadSpec& spec) override;
  // SIGTERM to the run's process group now, SIGKILL after stop_grace. Idempotent; no-op for
  // unknown or exited runs.
  void stop(const WorkloadKey& key) override;
  // Deletes an exited run's directory (kConflict while it runs; unknown runs are fine).
  Status forget(const WorkloadKey& key) override;
  // Reaps exited shims, reads exit records, escalates overdue stops. Cheap; call it often.
  void poll() override;

  std::vector<Workload> workloads() const override;
  const Workload* find(const WorkloadKey& key) const override;
  // When poll() must next run for a stop to escalate on time.
  std::optional<SteadyTime> next_deadline() const override;
  std::filesystem::path instance_dir(std::string_view instance_id) const override;
  // The users and groups of sandboxed runs (thread-safe), shared with the node API's copies into
  // volumes; null without a sandbox.
  std::shared_ptr<WorkloadUsers> workload_users() const { return users_; }

 private:
  struct Entry {
    Workload info;
    std::filesystem::path dir;
    pid_t shim_pid = 0;  // 0 while unknown (a shim that never recorded its state)
    uint64_t shim_start_time = 0;
    std::optional<SteadyTime> kill_at;  // SIGKILL deadline of a requested stop
    bool killed = false;                // SIGKILL was sent
    // Adopted without a state file: until then the shim may still record itself (see above).
    std::optional<SteadyTime> shim_expected_until;
    bool never_started = false;  // no shim recorded itself in time: dropped by drop_unstarted()
    std::string tenant_id;       // from the spec or the launch record
  };
  explicit ProcessRuntime(RuntimeOptions options);
  void adopt(const std::filesystem::path& dir);
  void refresh(Entry& entry, SteadyTime now);
  // Deletes the runs found never started (their directories too), so that they are started anew.
  void drop_unstarted();
  // Whether the recorded shim still runs; once it does not (reaping it when it is our child),
  // shim_pid becomes 0 so that no signal can reach a process that reused the pid.
  bool shim_alive(Entry& entry);
  void signal_group(Entry& entry, int signal);
  void mark_exited(Entry& entry, ExitRecord record);
  std::filesystem::path workload_dir(const WorkloadKey& key) const;
  // Without a sandbox: kConflict while another tenant's run is not over.
  Status admit_tenant(const model::WorkloadSpec& spec) const;
  // The run's sandbox: its users, home and volumes made ready for them, its cgroups made.
  Result<Sandbox> prepare_sandbox(const model::WorkloadSpec& spec,
                                  const std::filesystem::path& home,
                                  const std::vector<PreparedVolume>& volumes);

  RuntimeOptions options_;
  std::shared_ptr<WorkloadUsers> users_;  // with a sandbox
  std::string agent_path_;                // PATH for workloads whose spec does not set one
  std::map<WorkloadKey, Entry> entries_;
};

}  // namespace gpurent::agent
