// The agent's machinery behind agent::Agent, with the server link injected so that tests can run
// it against an in-memory server.
//
// start() discovers the GPUs, opens the process runtime (re-adopting running workloads), loads the
// node's identity or registers with the join token, and starts two threads:
//   - the poller long-polls the desired state (GET /v1/agent/desired, kDesiredWait) and hands each
//     new one to the reconciler; before that it registers, when start() could not reach the
//     server;
//   - the reconciler runs a Reconciler pass every report_interval, at once when a new desired
//     state arrives, and when a stop's grace period ends.
// Each thread has its own ServerLink. A failing server is retried with exponential backoff (at
// most kMaxBackoff; kAuthRetry after a 401) and logged once per change of state, never fatal.
// stop() joins both threads; workloads keep running for the next agent to adopt. The poller may be
// inside a long-poll, so stop() can take up to kDesiredWait plus the link's slack to return.
//
// Thread-safety: start(), stop() and node_id() may be called from any one thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/agent.h"
#include "agent/gpu/discovery.h"
#include "agent/identity.h"
#include "agent/runtime/process_runtime.h"
#include "agent/server_link.h"
#include "model/agent_protocol.h"

namespace gpurent::agent {

inline constexpr std::string_view kAgentVersion = "0.1.0";
inline constexpr std::chrono::seconds kDesiredWait{20};
inline constexpr std::chrono::milliseconds kMinBackoff{250};
inline constexpr std::chrono::milliseconds kMaxBackoff{5000};
inline constexpr std::chrono::seconds kAuthRetry{30};

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

  model::NodeRegistration registration() const;
  // Registers through link and persists the identity; the caller holds no lock.
  Status register_node(ServerLink& link);
  void poll_loop(std::unique_ptr<ServerLink> link);
  void reconcile_loop(std::unique_ptr<ServerLink> link);
  // Sleeps until `until` or stop(); false when stopping.
  bool sleep_until(SteadyTime until);

  const AgentOptions options_;
  const ServerLinkFactory links_;
  const std::string shim_executable_;
  GpuInventory inventory_;                   // set by start()
  std::unique_ptr<ProcessRuntime> runtime_;  // the reconciler thread's, once started

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool started_ = false;
  bool stopping_ = false;
  std::optional<Identity> identity_;
  std::optional<model::DesiredState> desired_;  // the newest from the server
  bool desired_pending_ = false;                // desired_ not yet seen by the reconciler

  std::thread poller_;
  std::thread reconciler_;
};

}  // namespace gpurent::agent
