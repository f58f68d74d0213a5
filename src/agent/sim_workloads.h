// The simulated agent: the workloads of one simulated node, runs that start no process and live in
// memory only. The one simulation of an agent that every simulation uses: the fleet of `gpurent
// agent --sim-nodes` (thousands of nodes in one process, against a real server), the replay of
// `gpurent simulate` (sim/replay.h) and the controller's simulation tests (the last two with no
// server in between: converge_and_report below).
//
// converge(desired, now): every desired run with should_run that is not tracked yet starts, and is
// running at once. When it has a duration (by default its env's kSimDurationEnv, in seconds,
// fractions allowed) it exits with 0 that long after it started, at the first advance() that
// reaches that time; otherwise it runs until the desired state stops it (should_run false, or no
// longer listed), and then exits at once with kSimStopExitCode, as a workload ended by SIGTERM
// does. A duration that is not one (not a number, or beyond kMaxSimDurationS) makes the run exit at
// once with kStartFailedExitCode and the reason. An exited run is never restarted (a new start is
// a new run), and it is forgotten once it is no longer desired and the server has been told how it
// ended. Only the first max_runs desired runs are considered (by default kMaxWorkloads, as a real
// agent).
//
// Logs and reports follow the Reconciler's rules for real runs: a run's log (the one line
// kSimLogLine) goes to the server once, before its exit is reported; until then the run is
// reported as running. A run's log is not due before the server has taken a report of the run
// running (or the run has exited): a run's start is reported without waiting for its log, which
// on a large fleet would put one log upload per run ahead of every first report. report() is the
// complete set of tracked runs, with the generation last converged to as applied_generation.
//
// Time is passed in (so tests drive it), in milliseconds of steady_clock, which hold a replay's
// virtual clock too (sim_time(): its input may span centuries, nanoseconds only 292 years). Not
// thread-safe: one owner.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/reconciler.h"  // kStartFailedExitCode; WorkloadKey and kMaxWorkloads
#include "agent/telemetry/source.h"
#include "common/clock.h"
#include "common/result.h"
#include "model/agent_protocol.h"

namespace gpurent::agent {

inline constexpr std::string_view kSimDurationEnv = "GPURENT_SIM_DURATION_S";
inline constexpr int kSimStopExitCode = 143;  // 128 + SIGTERM
inline constexpr std::string_view kSimLogLine =
    "gpurent: simulated workload (agent --sim-nodes): no process was started\n";
// A simulated run lasting longer than a year is a typo, not a plan.
inline constexpr double kMaxSimDurationS = 366.0 * 24 * 3600;

class SimWorkloads {
 public:
  using Time = std::chrono::time_point<std::chrono::steady_clock, std::chrono::milliseconds>;
  // How long a run lasts once started: nullopt for a run that lasts until it is stopped; an Error
  // fails its start (with the Error's message).
  using Duration = Result<std::optional<std::chrono::milliseconds>>;
  using DurationOf = std::function<Duration(const model::WorkloadSpec&)>;

  struct Options {
    DurationOf duration_of = env_duration;
    size_t max_runs = kMaxWorkloads;
  };

  SimWorkloads() : SimWorkloads(Options{}) {}
  explicit SimWorkloads(Options options) : options_(std::move(options)) {}

  // The default duration: the spec's env kSimDurationEnv, seconds from 0 to kMaxSimDurationS
  // ("invalid_sim_duration" for anything else).
  static Duration env_duration(const model::WorkloadSpec& spec);

  // The node's GPUs: a desired state's benchmark request is then answered at once with their
  // simulated figures (bench/gpu_bench.h). Without them requests are ignored, as by an agent
  // from before the benchmark.
  void answer_benchmarks(std::vector<model::Gpu> gpus) { gpus_ = std::move(gpus); }
  // Returns whether the report changed (a run started or stopped, the generation moved, or a
  // benchmark was answered).
  bool converge(const model::DesiredState& desired, Time now);
  // Ends the runs whose duration has passed by `now`; returns whether any did.
  bool advance(Time now);
  // The same for the one run `key`: a simulation that puts the exits of all its nodes in one
  // order in time ends them one at a time (sim/replay.cc).
  bool advance(Time now, const WorkloadKey& key);
  // Ends run `key` at once with exit_code, as a workload whose command fails or crashes (the
  // controller's simulation tests); false when it is not running.
  bool end(const WorkloadKey& key, int exit_code);
  // When the next running run's duration ends, if any has one.
  std::optional<Time> next_exit() const;
  // When run `key` ends, while it runs with a duration.
  std::optional<Time> ends_at(const WorkloadKey& key) const;

  // The runs whose log is due (see above) and that the server does not have yet.
  std::vector<WorkloadKey> unsent_logs() const;
  // The server took the log, or refused it for good: either way it is not sent again.
  void log_sent(const WorkloadKey& key);

  model::NodeReport report() const;
  // The server accepted `sent`: the runs in it, and their exits, are known there.
  void reported(const model::NodeReport& sent);

  size_t size() const { return runs_.size(); }
  // The running runs, in key order.
  std::vector<WorkloadKey> running() const;
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

  Options options_;
  std::vector<model::Gpu> gpus_;
  std::optional<model::BenchmarkOutcome> benchmark_;  // of the desired state's request
  int64_t applied_generation_ = 0;
  std::set<WorkloadKey> wanted_;  // the runs of the desired state last converged to
  std::map<WorkloadKey, Run> runs_;
};

// A virtual clock's time (the controller's Clock in a simulation) as SimWorkloads' time: the same
// milliseconds, from steady_clock's epoch instead of the Unix epoch.
inline SimWorkloads::Time sim_time(Timestamp virtual_now) {
  return SimWorkloads::Time(virtual_now.time_since_epoch());
}

// One round of a simulated agent that talks to the controller directly, with no server to upload
// logs to (sim/replay.cc, the controller's simulation tests): converges `workloads` to `desired`
// at `now`, counts every log that is due as taken, and returns the report to apply (the whole
// truth, as every report), counting it as taken too. Runs exit through advance() and end() only:
// a caller that moves time calls advance() first.
model::NodeReport converge_and_report(SimWorkloads& workloads, const model::DesiredState& desired,
                                      SimWorkloads::Time now);

}  // namespace gpurent::agent
