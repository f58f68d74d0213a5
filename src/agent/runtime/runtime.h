// What the agent's reconciler drives: a runtime that starts, stops and watches workloads (one run
// of one instance each) and tells how each ended. Three implement it: the process runtime (a
// plain process under a shim, process_runtime.h), the container runtime (a container through the
// Docker Engine API, container_runtime.h) and the VM runtime (a QEMU virtual machine,
// vm/vm_runtime.h); runtime_set.h puts them behind one.
//
// Contract shared by all:
// - start() validates the spec (validate_workload) and returns once the run is kRunning or
//   already kExited, or fails without leaving anything behind;
// - stop() is idempotent and never blocks for the grace period: SIGTERM now, SIGKILL from poll()
//   once the grace period has passed (next_deadline() says when poll() must run);
// - an exited run keeps its log and exit status until forget();
// - a runtime re-adopts the runs it finds when it is opened (the agent restarted).
// Environment of a workload: the spec's env, then a job member's variables (model::job_member_env
// of its placement: GPURENT_ARRAY_*, torchrun's), then CUDA_VISIBLE_DEVICES and
// NVIDIA_VISIBLE_DEVICES (the spec's GPU UUIDs joined by ','), GPURENT_INSTANCE_ID and GPURENT_RUN,
// which always win (platform_env()). A run's service variables (GPURENT_PORT_*, GPURENT_BASE_URL_*,
// GPURENT_SERVICE_TOKEN; node_runs.h) are in the spec's env already: the reconciler adds them
// before start(), so every runtime passes them on.
//
// Thread-safety: none; the reconcile thread owns the runtime.
#pragma once

#include <chrono>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/agent_protocol.h"
#include "model/telemetry.h"

namespace gpurent::agent {

// A node runs a handful of instances (one per GPU at most, usually fewer); 256 leaves room for
// exited runs awaiting their report and is still a bound that catches a runaway desired set.
inline constexpr size_t kMaxWorkloads = 256;
inline constexpr size_t kMaxCommandArgs = 4096;
inline constexpr size_t kMaxEnvEntries = 1024;
// Linux's MAX_ARG_STRLEN: no single argument or environment string may be longer.
inline constexpr size_t kMaxArgBytes = 128 * 1024;

struct WorkloadKey {
  std::string instance_id;
  int64_t run = 0;
  auto operator<=>(const WorkloadKey&) const = default;
};

struct Workload {
  WorkloadKey key;
  model::WorkloadPhase phase = model::WorkloadPhase::kStarting;
  std::optional<int> exit_code;  // set once phase is kExited
  std::string message;
  std::filesystem::path log_path;
  bool stop_requested = false;
  bool never_started = false;  // exited without its command ever running (ExitRecord)
};

class Runtime {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  virtual ~Runtime() = default;

  // Errors: invalid spec (kInvalidArgument), the run already exists (kConflict), too many runs
  // (kUnavailable), or the runtime cannot start it (its own codes).
  virtual Status start(const model::WorkloadSpec& spec) = 0;
  virtual void stop(const WorkloadKey& key) = 0;
  // Deletes an exited run's traces (kConflict while it runs; unknown runs are fine).
  virtual Status forget(const WorkloadKey& key) = 0;
  // Notices exits and escalates overdue stops. Cheap; call it often.
  virtual void poll() = 0;

  virtual std::vector<Workload> workloads() const = 0;
  virtual const Workload* find(const WorkloadKey& key) const = 0;  // valid until a non-const call
  virtual std::optional<SteadyTime> next_deadline() const = 0;
  // The instance's directory on the node: kept across runs, never deleted by the runtime on its
  // own (a stopped instance keeps its disk).
  virtual std::filesystem::path instance_dir(std::string_view instance_id) const = 0;
  // Deletes the instance's files on the node: its directory (and whatever else a runtime keeps of
  // it, as a VM's root disk). For the janitor (agent/janitor.h), once the server has deleted the
  // instance or placed it elsewhere. kConflict "instance_running" while a run of it has not
  // exited; errors: what could not be deleted.
  virtual Status remove_instance(std::string_view instance_id);
  // Appends what running workloads report of their own GPUs from inside, stamped time_ms: a VM's
  // guest holds GPUs passed through, which the host's NVML cannot read (vm/guest_gpu_report.h).
  // Only reports that arrived since the last call; none from the other runtimes, whose GPUs the
  // host reads itself.
  virtual void guest_gpu_samples(int64_t time_ms, std::vector<model::GpuSample>& out);
};

// Instance ids become directory and container names: [A-Za-z0-9_.-], not starting with '.'.
bool valid_instance_id(std::string_view id);
// The checks every runtime applies before start(): id, run, command, env, GPU names, volume mounts
// (model::validate_volume_mounts), bounds.
Status validate_workload(const model::WorkloadSpec& spec);
// Whose ids the run's files get on the node (its tenant's group, its tenant's guest ids): the
// spec's tenant; a run from a server that does not say its tenant shares them with nobody.
std::string_view id_owner(const model::WorkloadSpec& spec);
// The spec's env with the platform's variables on top (see the header comment).
std::map<std::string, std::string> platform_env(const model::WorkloadSpec& spec);
// kConflict "instance_running" when a run of the instance among `workloads` has not exited: its
// files are in use (Runtime::remove_instance).
Status check_instance_ended(const std::vector<Workload>& workloads, std::string_view instance_id);
// Whether a runtime that tracks `tracked` runs may start this one: kConflict "workload_exists"
// when it tracks it already, kUnavailable "too_many_workloads" at kMaxWorkloads.
Status admit_workload(const WorkloadKey& key, bool already_tracked, size_t tracked);

// For runtimes that keep their runs in a map from WorkloadKey to an entry with a Workload `info`.
template <class Entries>
std::vector<Workload> workloads_of(const Entries& entries) {
  std::vector<Workload> out;
  out.reserve(entries.size());
  for (const auto& [key, entry] : entries) out.push_back(entry.info);
  return out;
}
template <class Entries>
const Workload* find_workload(const Entries& entries, const WorkloadKey& key) {
  const auto it = entries.find(key);
  return it == entries.end() ? nullptr : &it->second.info;
}

}  // namespace gpurent::agent
