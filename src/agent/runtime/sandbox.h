// The process runtime's sandbox: what keeps one tenant's process run away from the node's secrets,
// from other tenants' runs, and within the CPU and memory it rents.
//
// A sandboxed run (the agent is root and the kernel gives it PID and mount namespaces; see
// probe_sandbox) is made by the shim (shim.cc) as follows:
//   - a new PID namespace whose init is a small reaper of the shim's (run_sandbox_init): the run
//     sees only its own processes, and when its main process ends, everything it started ends too;
//   - a new mount and IPC namespace with a view built by build_sandbox_view: a fresh /proc (of the
//     new PID namespace), private /tmp, /var/tmp and /dev/shm, every `hidden` directory (the
//     agent's data directory, the directory of all instances' homes) replaced by an empty one, and
//     the run's home reachable at its own path even where an ancestor is not (an unreachable
//     ancestor is replaced by an empty directory: it hid its whole subtree from this user anyway),
//     with the run's volumes bound below it;
//   - the run joins its cgroups (cgroups.h: its CPU, memory and process limits);
//   - the workload process runs as the instance's own user (an unprivileged uid allocated per
//     instance, workload_users.h) and its tenant's group, with every capability dropped from all
//     sets including the bounding set, and no_new_privs set (a setuid program cannot give any
//     back).
// `gpurent exec` joins the same namespaces and cgroups as the same user (join_sandbox).
//
// Nothing is shared with other runs but the host's read-only system (its /usr and /etc, readable
// to every user) and its network: the run uses the node's network namespace, so its services
// listen on the node's loopback (docs/runtime.md says what this does and does not isolate).
//
// Thread-safety: the functions that run in a forked child say which calls they make.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/result.h"

namespace gpurent::agent {

struct SandboxBind {
  std::string source;  // a volume's data directory on the node
  std::string target;  // where the run sees it: below its home, absolute
};

// How one run is sandboxed; recorded in its launch record (workload_files.h) so that the shim and
// `gpurent exec` both read it.
struct Sandbox {
  uint32_t uid = 0;  // the instance's user; never 0
  uint32_t gid = 0;  // the tenant's group (its volumes are shared through it)
  std::string home;  // the run's working directory and HOME: absolute, without symbolic links
  std::vector<std::string> hidden;   // directories the run must not see into
  std::vector<SandboxBind> binds;    // volumes
  std::vector<std::string> cgroups;  // cgroup directories the run joins (cgroup.procs in each)
};

Json sandbox_json(const Sandbox& sandbox);
Result<Sandbox> parse_sandbox(const Json& json);

// Whether this host can sandbox process runs: the agent is root and a child can make PID and mount
// namespaces and mount a /proc in them (a container without CAP_SYS_ADMIN cannot). The error says
// why not. Forks a short-lived child; call it once, at start.
Status probe_sandbox();

// In the init of a new PID namespace, after unshare(CLONE_NEWNS | CLONE_NEWIPC): builds the view
// described above. Allocates; the caller is a child of the single-threaded shim.
Status build_sandbox_view(const Sandbox& sandbox);

// Writes "0" to cgroup.procs of each of the sandbox's cgroups: the caller joins them, and every
// process it starts after will be in them. Only open/write/close.
Status join_sandbox_cgroups(const Sandbox& sandbox);

// Makes the calling process the sandbox's user: drops every capability from the bounding set, sets
// the groups, gid and uid (raw system calls: only this thread changes, as after a fork), and
// no_new_privs. Async-signal-safe. Returns the errno of the first call that failed, or 0.
int drop_to_sandbox_user(uint32_t uid, uint32_t gid);

// The loop of a sandbox's PID 1: forwards SIGTERM, SIGINT and SIGHUP to every process in the
// namespace, reaps whatever ends, and when `workload` ends writes its wait status (an int) to
// status_fd and exits; the kernel then kills whatever is left in the namespace. Never returns.
[[noreturn]] void run_sandbox_init(pid_t workload, int status_fd);

// For `gpurent exec`: what a child needs to enter a running sandbox, opened before the fork (the
// agent is multithreaded: the child may only make system calls).
struct SandboxEntry {
  int pid_namespace = -1;  // /proc/<init>/ns/pid
  int mount_namespace = -1;
  std::vector<int> cgroup_procs;  // cgroup.procs of each cgroup, opened for writing
  uint32_t uid = 0;
  uint32_t gid = 0;
  SandboxEntry() = default;
  SandboxEntry(const SandboxEntry&) = delete;
  SandboxEntry& operator=(const SandboxEntry&) = delete;
  SandboxEntry(SandboxEntry&& other) noexcept;
  ~SandboxEntry();
};

// Opens what entering the sandbox whose init is `init` needs.
Result<SandboxEntry> open_sandbox_entry(pid_t init, const Sandbox& sandbox);

// In a forked child (async-signal-safe): joins the sandbox's mount namespace and cgroups and makes
// the PID namespace the one of the caller's next child. Returns 0 or the failing call's errno.
int join_sandbox(const SandboxEntry& entry);

// In a forked child (async-signal-safe), for what runs in a running sandbox (`gpurent exec`,
// `gpurent cp`): joins the sandbox, and forks the process that returns from here as the sandbox's
// user; this one waits for it and ends as it ended, so that its pid and process group stay what the
// agent watches and kills. On failure writes "<who>: <why>" to stderr and exits with 126.
void enter_sandbox_as_user(const SandboxEntry& entry, std::string_view who);

}  // namespace gpurent::agent
