// The workloads of one simulated node (`gpurent agent --sim-nodes`): runs that start no process and
// live in memory only, so that one agent process can stand in for thousands of nodes.
//
// converge(desired, now): every desired run with should_run that is not tracked yet starts, and is
// running at once. When its env sets kSimDurationEnv (seconds, fractions allowed) it exits with 0
// that long after it started; otherwise it runs until the desired state stops it (should_run
// false, or no longer listed), and then exits at once with kSimStopExitCode, as a workload ended by
// SIGTERM does. A duration that is not a number makes the run exit at once with
// kStartFailedExitCode and the reason. An exited run is never restarted (a new start is a new run),
// and it is forgotten once it is no longer desired and the server has been told how it ended. Only
// the first kMaxWorkloads desired runs are considered.
//
// Logs and reports follow the Reconciler's rules for real runs: a run's log (the one line
// kSimLogLine) goes to the server once, before its exit is reported; until then the run is
// reported as running. A run's log is not due before the server has taken a report of the run
// running (or the run has exited): a run's start is reported without waiting for its log, which
// on a large fleet would put one log upload per run ahead of every first report. report() is the
// complete set of tracked runs, with the generation last converged to as applied_generation.
//
// Time is passed in (steady_clock), so tests drive it. Not thread-safe: one owner.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/reconciler.h"  // kStartFailedExitCode; WorkloadKey and kMaxWorkloads
#include "agent/telemetry/source.h"
#include "model/agent_protocol.h"

namespace gpurent::agent {

inline constexpr std::string_view kSimDurationEnv = "GPURENT_SIM_DURATION_S";
inline constexpr int kSimStopExitCode = 143;  // 128 + SIGTERM
inline constexpr std::string_view kSimLogLine =
    "gpurent: simulated workload (agent --sim-nodes): no process was started\n";

class SimWorkloads {
 public:
  using Time = std::chrono::steady_clock::time_point;

  // Returns whether the report changed (a run started or stopped, or the generation moved).
  bool converge(const model::DesiredState& desired, Time now);
  // Ends the runs whose duration has passed by `now`; returns whether any did.
  bool advance(Time now);
  // When the next running run's duration ends, if any has one.
  std::optional<Time> next_exit() const;

  // The runs whose log is due (see above) and that the server does not have yet.
  std::vector<WorkloadKey> unsent_logs() const;
  // The server took the log, or refused it for good: either way it is not sent again.
  void log_sent(const WorkloadKey& key);

  model::NodeReport report() const;
  // The server accepted `sent`: the runs in it, and their exits, are known there.
  void reported(const model::NodeReport& sent);

  size_t size() const { return runs_.size(); }
  // The GPUs of the running runs, for the simulated telemetry.
  BusyGpus busy_gpus() const;

 private:
  struct Run {
    model::WorkloadPhase phase = model::WorkloadPhase::kRunning;
    std::optional<Time> ends_at;  // while running with a duration
    std::optional<int> exit_code;
    std::string message;
    bool log_sent = false;
    bool reported = false;  // the server took a report with this run
    bool exit_reported = false;
    std::vector<std::string> gpus;  // UUIDs
  };
  static void end_run(Run& run, int code, std::string message = {});

  int64_t applied_generation_ = 0;
  std::set<WorkloadKey> wanted_;  // the runs of the desired state last converged to
  std::map<WorkloadKey, Run> runs_;
};

}  // namespace gpurent::agent
