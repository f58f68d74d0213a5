// The node agent: discovers the host's GPUs, joins the server, and converges the node to the
// server's desired set of workloads (level-triggered), reporting what actually runs.
//
// Threads: start() launches the agent's own threads (desired-state watch, reconcile/report
// loop, log upload); stop() joins them. Workload processes are not children of those threads in
// any lasting sense: each runs under a shim in its own session, so they survive an agent restart
// and are re-adopted by the next agent that starts with the same data directory.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "agent/runtime/docker_api.h"
#include "agent/vm/vm_host.h"
#include "client/http_client.h"
#include "common/result.h"

namespace gpurent::agent {

struct AgentOptions {
  std::string server_url;  // "http://127.0.0.1:8080"
  // For an https:// server: whom to trust, and the certificate to present (mutual TLS).
  client::TlsOptions tls;
  std::string join_token;  // needed on the first start only; the identity is kept in data_dir
  std::string data_dir = "./gpurent-agent";
  std::string sim_gpus;      // "" = NVML when present, else 8xh100-80g; a spec forces simulation
  std::string node_name;     // "" = hostname
  std::string fabric_group;  // nodes behind one InfiniBand switch share one; "" = none
  std::map<std::string, std::string> labels;  // region, zone, edge, ... (see parse_label)
  // How the node's peers reach it (MASTER_ADDR of multi-node jobs); "" = the local address
  // facing the server (local_address_toward in host.h).
  std::string advertise_address;
  // The Docker Engine API socket (Docker or Podman) for workloads that name an image; "" = this
  // node runs plain processes only.
  std::string container_socket;
  GpuAccess gpu_access = GpuAccess::kNvidiaDeviceRequest;  // how containers get their GPUs
  // Give containers GPUs even with an NVIDIA Container Toolkit the agent does not trust (too old,
  // not found, its version unreadable: runtime/container_toolkit.h). Unsafe: a tenant's image may
  // then escape to the host.
  bool allow_unsafe_container_toolkit = false;
  // The VM runtime (vm/vm_runtime.h): the guest kernel and initrd every VM boots, or a cloud image
  // (qcow2) instead; neither = this node runs no VMs.
  std::string vm_kernel;
  std::string vm_initrd;
  std::string vm_image;
  VmAcceleratorChoice vm_accelerator = VmAcceleratorChoice::kAuto;
  VmNetwork vm_network = VmNetwork::kOutbound;  // what guests reach (vm/qemu_command.h)
  VmShares vm_shares = VmShares::k9p;  // how shared folders reach guests (vm/qemu_command.h)
  // How long a stopped VM's guest may take to shut down before QEMU is killed: a cloud image's
  // systemd stops its services first (its own default allows each 90 s).
  std::chrono::milliseconds vm_stop_grace{60'000};
  // The node API's port (node_api.h), on the advertised address; 0 = an ephemeral port.
  uint16_t node_api_port = 0;
  // > 0: run that many simulated nodes in this process instead of this host (sim_fleet.h).
  int sim_nodes = 0;
  std::chrono::milliseconds report_interval{1000};
  // How often the GPUs are sampled (docs/agent.md: telemetry); 0 = no telemetry.
  std::chrono::milliseconds telemetry_interval{1000};
  std::chrono::milliseconds stop_grace{10000};  // SIGTERM -> SIGKILL
  // Process runs' homes (process_runtime.h); "" = "<data_dir>-instances" beside the data directory.
  std::string instances_dir;
  // Whether process runs are sandboxed (sandbox.h): when the host allows it (root, namespaces),
  // or never (the node then runs one tenant's process runs at a time).
  bool sandbox = true;
  // The uids and gids of sandboxed runs (workload_users.h), "FIRST-LAST"; "" = the default.
  std::string workload_ids;
};

class Agent {
 public:
  explicit Agent(const AgentOptions& options);
  ~Agent();  // stops the threads if still running
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Discovers GPUs, registers with the server (or reuses the identity in data_dir) and starts the
  // threads. Fails if the GPUs cannot be discovered or the server refuses the join token.
  Status start();
  void stop();

  std::string node_id() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `gpurent agent`: runs an Agent until SIGINT/SIGTERM, or with sim_nodes > 0 a simulated fleet
// (run_sim_fleet). Returns the process exit code.
int run_agent(const AgentOptions& options);

// Parses one `--label KEY=VALUE`. KEY: 1 to 63 of [A-Za-z0-9._/-]; VALUE: up to 253 of the same and
// ':' (no spaces or commas, so that a list of labels stays easy to write and to parse).
// Error code "invalid_label".
Result<std::pair<std::string, std::string>> parse_label(std::string_view text);

// Whether `--advertise-address` is a host name or an IP address: 1 to 253 of [A-Za-z0-9.-:]
// (it becomes MASTER_ADDR in other nodes' environments, so nothing a shell would interpret).
bool valid_advertise_address(std::string_view text);

// The hidden `gpurent __shim` subcommand that supervises one workload process (see runtime/).
int run_workload_shim(int argc, char** argv);

}  // namespace gpurent::agent
