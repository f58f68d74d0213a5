// The container runtime: runs each workload (one run of one instance) as a container through the
// Docker Engine API (Docker, or Podman's compatible service), and tells the agent what runs and
// how each run ended. The Runtime contract is in runtime.h.
//
// A run is the container `gpurent-<instance_id>-<run>`, labelled gpurent.managed=true,
// gpurent.owner (this runtime's data directory), gpurent.instance and gpurent.run. The engine is
// the source of truth: open() re-adopts every container of its owner, running or exited, so an
// agent restart neither loses nor duplicates work; containers of runs the server no longer wants
// are stopped and removed by the reconciler as for processes.
//
// The container gets: the spec's image and command (empty: the image's own); platform_env() on
// top of the spec's env; its GPUs by UUID (NVIDIA device requests or CDI names, by option); the
// instance directory <data_dir>/instances/<id> mounted at /workspace, its working directory, kept
// across runs; CPU (NanoCpus) and memory limits from the spec, a pids limit, /dev/shm of half the
// memory (PyTorch's data loaders live in it; 1 GiB when memory is not limited, at most 16 GiB);
// and explicit nofile/nproc ulimits (hosts whose own limits the engine cannot apply refuse
// containers that inherit them). Every container is hardened as DockerClient does it (docker_api.h:
// no privileges gained, few capabilities, no host sockets); its only bind mounts are its instance
// directory and its volumes, both under the data directory, which open() checks may be mounted.
//
// GPUs: with gpu_refusal set (the node's NVIDIA Container Toolkit is one the agent will not trust,
// container_toolkit.h), start() refuses a spec that has GPUs (kUnprocessable
// "container_gpus_refused", with the reason); containers it adopted keep running.
//
// Output: poll() copies new log lines from the engine into <data_dir>/containers/<id>.<run>/
// output.log (not under workloads/, which the process runtime re-adopts as its own), asking only
// for lines from the second of the last one copied, so the agent uploads them as it does a
// process's. The engine keeps stdout and stderr apart within a second, so lines of the two
// streams written in the same second may be copied out of order.
//
// Stopping: stop() sends SIGTERM; poll() sends SIGKILL once stop_grace has passed (the engine's
// own stop call would block the reconcile thread for the grace period). A container removed from
// outside is reported exited with 137.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/runtime/docker_api.h"
#include "agent/runtime/runtime.h"

namespace gpurent::agent {

struct ContainerRuntimeOptions {
  std::filesystem::path data_dir;
  std::string socket_path = "/run/podman/podman.sock";
  std::chrono::milliseconds stop_grace{10000};
  GpuAccess gpu_access = GpuAccess::kNvidiaDeviceRequest;
  // Host networking lets the agent reach a workload's ports on the node's loopback (Jupyter).
  std::string network_mode = "host";
  // Why containers get no GPUs on this node; "" = they do.
  std::string gpu_refusal;
};

class ContainerRuntime final : public Runtime {
 public:
  // Connects to the engine (kUnavailable "engine_unavailable" when it does not answer) and
  // re-adopts the containers it finds. A data directory that could not be mounted
  // (check_bind_source: under /run, say) fails with "forbidden_mount".
  static Result<std::unique_ptr<ContainerRuntime>> open(ContainerRuntimeOptions options);

  Status start(const model::WorkloadSpec& spec) override;
  void stop(const WorkloadKey& key) override;
  Status forget(const WorkloadKey& key) override;
  void poll() override;
  std::vector<Workload> workloads() const override;
  const Workload* find(const WorkloadKey& key) const override;
  std::optional<SteadyTime> next_deadline() const override;
  std::filesystem::path instance_dir(std::string_view instance_id) const override;

 private:
  struct Entry {
    Workload info;
    std::string container;  // id
    std::optional<SteadyTime> kill_at;
    bool killed = false;
    SteadyTime next_refresh{};
    // Log copying: the engine dates lines to the second (Podman's compatible API), so the copy
    // asks again from the second it last saw and skips that second's lines it copied already.
    int64_t last_second = 0;
    int64_t copied_in_last_second = 0;
    int64_t skip_bytes = 0;  // adopted: the log file already holds this much
  };

  ContainerRuntime(ContainerRuntimeOptions options, DockerClient client);
  Status adopt_all();
  void refresh(Entry& entry);
  void copy_logs(Entry& entry);
  std::filesystem::path workload_dir(const WorkloadKey& key) const;

  ContainerRuntimeOptions options_;
  DockerClient client_;
  std::string owner_;  // the gpurent.owner label: the data directory, so agents sharing an engine
                       // adopt only their own containers
  std::map<WorkloadKey, Entry> entries_;
};

// The name of a run's container.
std::string container_name(const WorkloadKey& key);

}  // namespace gpurent::agent
