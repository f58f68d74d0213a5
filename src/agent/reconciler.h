// One pass of the agent's control loop, without threads: converge the node to a desired state,
// then bring the server up to date (log bytes first, then the report).
//
// converge(): starts every desired run with should_run that is neither tracked nor already failed
// to start (an exited run is never restarted: a new start is a new run), stops runs that should
// not run or are no longer desired, and forgets exited runs that are no longer desired once the
// server has been told how they ended.
//
// sync(): uploads each run's new log bytes (at most kLogChunkBytes per request and
// kMaxLogBytesPerRunPerSync per run per pass, so one chatty run cannot starve the report), then
// reports every tracked run, with the oldest batch of the telemetry backlog (set_telemetry), which
// leaves the backlog once the server took the report. A run's exit is reported only once its whole
// log is on the server, so that the server never sees an exit with a partial log; until then it is
// reported as running. A server that refuses a run's log (it no longer knows the run) gets the exit
// without it.
//
// The report's applied_generation is the generation converge() last acted on: every run of that
// desired state is then in the report (tracked, or failed to start and reported exited with
// kStartFailedExitCode), which is what lets the server conclude that an absent run was lost.
//
// Services: a run that declares services gets their ports and token from NodeRuns before it starts
// (service_env, added to its spec's env so that either runtime passes them on), and after every
// converge() the reconciler publishes to NodeRuns which runs are running and where, for the node
// API's thread.
//
// Not thread-safe: owned by the agent's reconcile thread, like the Runtime it drives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "agent/bench/benchmarker.h"
#include "agent/node_runs.h"
#include "agent/runtime/runtime.h"
#include "agent/server_link.h"
#include "agent/telemetry/telemetry.h"
#include "model/agent_protocol.h"

namespace gpurent::agent {

inline constexpr size_t kLogChunkBytes = 256 * 1024;
inline constexpr size_t kMaxLogBytesPerRunPerSync = 4 * kLogChunkBytes;
// The exit status reported for a run the runtime refused to start (as a shell reports a command it
// cannot run); the message says why.
inline constexpr int kStartFailedExitCode = 127;

class Reconciler {
 public:
  Reconciler(Runtime& runtime, NodeRuns& runs) : runtime_(runtime), runs_(runs) {}

  // Where the node API listens and its secret, sent with every report.
  void set_node_api(std::string address, std::string secret) {
    node_api_address_ = std::move(address);
    node_api_secret_ = std::move(secret);
  }
  // Whether the node runs image work (a container engine, and GPU containers allowed), and what
  // the agent found of the NVIDIA Container Toolkit (nullopt: not checked); sent with every
  // report.
  void set_container_runtime(bool available, std::optional<model::ContainerToolkit> toolkit) {
    container_runtime_ = available;
    container_toolkit_ = std::move(toolkit);
  }
  // What the node can do with VMs (nullopt: it runs none); sent with every report.
  void set_vm_capability(std::optional<model::VmCapability> vm) { vm_ = std::move(vm); }
  // Makes a workdir's upload available at workdir_archive() before a run that unpacks it starts
  // (runtime/workdir.h); its error fails the start. Unset: such runs fail to start.
  using WorkdirFetcher = std::function<Status(std::string_view upload_id)>;
  void set_workdir_fetcher(WorkdirFetcher fetch) { fetch_workdir_ = std::move(fetch); }
  // Where sync() takes each report's telemetry batch from; nullptr (the default): none.
  void set_telemetry(TelemetryBacklog* backlog) { telemetry_ = backlog; }
  // Who measures the GPUs a desired state asks for (bench/benchmarker.h); each report carries the
  // outcome of the request the desired state holds. nullptr (the default): requests are ignored.
  void set_benchmarker(Benchmarker* benchmarker) { benchmarker_ = benchmarker; }

  void converge(const model::DesiredState& desired);
  // Fails with the link's error when the server could not take the logs or the report; the caller
  // backs off. Per-run refusals of a log are handled here and do not fail the pass.
  Status sync(ServerLink& link, std::string_view credential);
  // The report sync() would send now.
  model::NodeReport report() const;

 private:
  struct LogCursor {
    int64_t offset = 0;      // the next byte the server needs
    bool abandoned = false;  // the server refused the log; stop sending it
  };

  Status upload_log(ServerLink& link, std::string_view credential, const Workload& workload);
  Status start(const model::WorkloadSpec& spec);
  void publish(const std::map<WorkloadKey, const model::WorkloadSpec*>& wanted);
  bool log_complete(const Workload& workload) const;

  Runtime& runtime_;
  NodeRuns& runs_;
  std::string node_api_address_;
  std::string node_api_secret_;
  std::optional<bool> container_runtime_;
  std::optional<model::ContainerToolkit> container_toolkit_;
  std::optional<model::VmCapability> vm_;
  WorkdirFetcher fetch_workdir_;
  TelemetryBacklog* telemetry_ = nullptr;
  Benchmarker* benchmarker_ = nullptr;
  std::optional<int64_t> benchmark_asked_;  // the request of the desired state applied
  int64_t applied_generation_ = 0;
  std::map<WorkloadKey, LogCursor> logs_;
  std::map<WorkloadKey, std::string> failed_starts_;  // why; bounded by the desired set
  std::set<WorkloadKey> exit_reported_;               // the server has seen these runs' exits
};

}  // namespace gpurent::agent
