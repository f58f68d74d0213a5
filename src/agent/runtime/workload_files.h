// The files of one workload directory (<data_dir>/workloads/<instance_id>.<run>/), shared by the
// process runtime (agent side) and the shim (workload side); they are the only channel between the
// two that survives an agent restart.
//
//   launch.json  written by the agent before it starts the shim: command, full env, working dir,
//                the tenant, and the sandbox (sandbox.h) when the run is sandboxed; mode 0600
//   state.json   written by the shim once it leads its own session: its pid and /proc start time,
//                and again once a sandboxed run's init is forked, with the init's pid
//   output.log   the workload's stdout and stderr, appended
//   exit.json    written once, when the run is over: {"exit_code", "message"}; the agent reports
//                the exit status from this file only, whether or not the shim is its child
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/runtime/sandbox.h"
#include "common/result.h"

namespace gpurent::agent {

inline constexpr std::string_view kLaunchFile = "launch.json";
inline constexpr std::string_view kStateFile = "state.json";
inline constexpr std::string_view kLogFile = "output.log";
inline constexpr std::string_view kExitFile = "exit.json";

// The descriptor on which the shim tells the agent it has started (one byte, kShimReady) or why it
// could not be executed (kShimExecFailed + errno); see ProcessRuntime::start.
inline constexpr int kShimReadyFd = 3;
inline constexpr char kShimReady = 'R';
inline constexpr char kShimExecFailed = 'E';

// Exit status of a run whose process group was killed with SIGKILL (128 + 9), and of one that
// vanished without a record (the only thing that kills a shim without letting it write one).
inline constexpr int kKilledExitCode = 137;

// What the agent asked the shim to run (launch.json); `gpurent exec` runs its commands with the
// same env and working directory.
struct Launch {
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::string cwd;
  std::string tenant_id;           // empty: not told (an older server)
  std::optional<Sandbox> sandbox;  // none: the run shares the agent's user and view of the host
};
Json launch_json(const Launch& launch);
Result<Launch> read_launch(const std::filesystem::path& dir);

struct ExitRecord {
  int exit_code = 0;
  std::string message;  // empty for a normal exit
  // The command never ran (it could not be executed, or its sandbox not made): the run is not
  // billed as one that ran (WorkloadStatus::never_started).
  bool never_started = false;
};

Status write_exit_record(const std::filesystem::path& dir, const ExitRecord& record);
// kNotFound (code "file_not_found") while the run has not ended.
Result<ExitRecord> read_exit_record(const std::filesystem::path& dir);

struct ShimState {
  pid_t pid = 0;
  uint64_t start_time = 0;  // /proc/<pid>/stat field 22, in clock ticks since boot
  pid_t sandbox_init = 0;   // a sandboxed run's PID 1, as the host numbers it; 0: none (yet)
};

Status write_shim_state(const std::filesystem::path& dir, const ShimState& state);
Result<ShimState> read_shim_state(const std::filesystem::path& dir);

// What /proc says about a process: nothing when it does not exist.
struct ProcStat {
  char state = '?';  // 'R', 'S', 'Z', ...
  uint64_t start_time = 0;
};
std::optional<ProcStat> read_proc_stat(pid_t pid);
// Whether the process `pid` that started at `start_time` (ProcStat's) runs still: it exists, has
// not ended (a zombie, or dead) and is no other process given its pid again.
bool still_running(pid_t pid, uint64_t start_time);

}  // namespace gpurent::agent
