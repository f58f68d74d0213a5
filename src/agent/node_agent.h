// The agent's machinery behind agent::Agent, with the server link injected so that tests can run
// it against an in-memory server.
//
// start() discovers the GPUs, checks the NVIDIA Container Toolkit where a container engine meets
// real GPUs (runtime/container_toolkit.h: a toolkit it does not trust means no image work here,
// said at registration and in every report), opens the process runtime (re-adopting running
// workloads) and the container runtime, starts the node API (node_api.h) on the advertised
// address, loads the node's identity or registers with the join token, and starts two threads:
//   - the poller watches the desired state (GET /v1/agent/desired?watch=true: one stream carries
//     every change) and hands each new one to the reconciler; before that it registers, when
//     start() could not reach the server;
//   - the reconciler runs a Reconciler pass every report_interval, at once when a new desired
//     state arrives, and when a stop's grace period ends; it also samples the GPUs every
//     telemetry_interval (telemetry/telemetry.h: NVML, or the simulator for simulated GPUs, whose
//     faults file is <data_dir>/sim_faults.json) and each report carries the oldest batch of the
//     samples not yet sent.
// Each thread has its own ServerLink. A failing server is retried after retry_delay()
// (server_link.h) and logged once per change of state, never fatal.
//
// stop() joins the reconciler, and the poller unless it is inside a watch after kPollerJoinWait: a
// link cannot be interrupted, and waiting for the watch's next line would hold `gpurent dev`
// (which stops its agent before its server) and `gpurent agent` up to model::kWatchKeepalive on
// every shutdown. The poller is then detached; it owns everything it touches (its link and the
// Shared state), and at the watch's next line it sees the stop and exits without logging or
// writing anything.
// Workloads keep running for the next agent to adopt.
//
// Thread-safety: start() and stop() from one thread; node_id() from any.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/agent.h"
#include "agent/gpu/discovery.h"
#include "agent/identity.h"
#include "agent/node_api.h"
#include "agent/node_runs.h"
#include "agent/runtime/process_runtime.h"
#include "agent/runtime/runtime.h"
#include "agent/server_link.h"
#include "agent/telemetry/telemetry.h"
#include "agent/vm/vm_runtime.h"
#include "common/clock.h"
#include "model/agent_protocol.h"

namespace gpurent::agent {

inline constexpr std::string_view kAgentVersion = "0.1.0";
// The shortest time from one watch's start to the next's: a server that ends each watch at once
// (or answers it as a long poll) cannot make the agent spin. A change made meanwhile comes at
// once in the next watch, whose generation is older.
inline constexpr std::chrono::milliseconds kMinWatchInterval{100};
inline constexpr std::chrono::milliseconds kPollerJoinWait{200};

class NodeAgent {
 public:
  NodeAgent(AgentOptions options, ServerLinkFactory links,
            std::string shim_executable = "/proc/self/exe");
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  Status start();
  void stop();
  std::string node_id() const;

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  // What the threads share; held through a shared_ptr because a detached poller outlives stop().
  struct Shared {
    std::mutex mutex;
    std::condition_variable changed;
    bool stopping = false;
    bool poller_done = false;
    std::optional<Identity> identity;
    std::optional<model::DesiredState> desired;  // the newest from the server
    bool desired_pending = false;                // desired not yet seen by the reconciler
  };
  // What the poller needs to register in the background, copied so it does not touch the agent.
  struct Registrar {
    std::string join_token;
    model::NodeRegistration registration;
    std::filesystem::path data_dir;
  };

  model::NodeRegistration registration() const;
  // How process runs are kept apart here (process_runtime.h: isolation), said at registration.
  struct Isolation {
    std::optional<SandboxOptions> sandbox;  // none: not sandboxed
    std::string note;                       // why not, or what the sandbox limits with
  };
  Result<Isolation> detect_isolation() const;
  // With --vm-kernel: what the host can do with VMs (vm_), and the runtime; else null. users: the
  // sandbox's (null without one), which give each tenant's guests their ids over virtio-fs.
  Result<std::unique_ptr<VmRuntime>> open_vm_runtime(std::shared_ptr<WorkloadUsers> users);
  // Whether the node runs image work: it has a container engine, and containers may get GPUs
  // (every instance holds at least one, so a node whose containers may not runs no image work).
  bool runs_containers() const;
  static void poll_loop(std::shared_ptr<Shared> shared, std::unique_ptr<ServerLink> link,
                        const Registrar& registrar);
  void reconcile_loop(std::unique_ptr<ServerLink> link);
  // Makes the upload present at workdir_archive() (runtime/workdir.h), fetched through `link`
  // with the node's identity when missing. Thread-safe (each caller its own link).
  Status fetch_upload(ServerLink& link, std::string_view upload_id);
  // nullopt when telemetry is off or the GPUs cannot be sampled (logged).
  std::optional<NodeTelemetry> make_telemetry() const;

  const AgentOptions options_;
  const ServerLinkFactory links_;
  const std::string shim_executable_;
  const SystemClock wall_clock_;  // the telemetry samples' times
  GpuInventory inventory_;        // set by start()
  Isolation isolation_;           // set by start()
  // Set by start() where a container engine meets real GPUs (container_toolkit.h).
  std::optional<model::ContainerToolkit> container_toolkit_;
  std::optional<model::VmCapability> vm_;  // set when the node runs VMs
  std::unique_ptr<Runtime> runtime_;       // the reconciler thread's, once started
  std::unique_ptr<NodeRuns> runs_;         // shared by the reconciler and the node API
  std::unique_ptr<NodeApi> node_api_;
  const std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  bool started_ = false;  // start() and stop() are called from one thread

  std::thread poller_;
  std::thread reconciler_;
};

}  // namespace gpurent::agent
