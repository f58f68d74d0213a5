// A GPU host and its GPUs, as the controller knows them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/field_table.h"
#include "model/benchmark.h"

namespace gpurent::model {

struct Gpu {
  std::string uuid;  // "GPU-..." from NVML, or a deterministic fake for simulated GPUs
  int index = 0;     // the device index on its node
  std::string type;  // catalog slug
  std::string name;  // the device name as reported
  int64_t memory_mb = 0;
  // Topology, for placement: GPUs with the same nvlink_domain are joined by NVLink/NVSwitch;
  // pcie_switch and numa_node group them further. -1: unknown (each GPU its own domain).
  int nvlink_domain = -1;
  int pcie_switch = -1;
  int numa_node = -1;
  // The PCI function as sysfs names it ("0000:3b:00.0"): what passing the GPU to a VM binds
  // (agent/vm/vfio.h). "": simulated, or not read.
  std::string pci_address;
};

// The NVIDIA Container Toolkit as a node's agent found it (agent/runtime/container_toolkit.h).
struct ContainerToolkit {
  std::string version;          // the lowest its tools said ("1.17.8"); "": none installed or read
  bool gpu_containers = false;  // whether the agent gives containers GPUs with it
  std::string note;             // why not, or that the operator allowed an unsafe one; "" if fine
  bool operator==(const ContainerToolkit&) const = default;
};

template <class V, schema::Of<ContainerToolkit> S>
void fields(V& visit, S& x) {
  visit("gpu_containers", x.gpu_containers);
  visit("note", x.note, schema::kOptional);
  visit("version", x.version);
}

// What a node's agent can do with virtual machines (agent/vm/, docs/vm-runtime.md); a node without
// one runs no VM work.
struct VmCapability {
  std::string accelerator;       // "kvm" (hardware) or "tcg" (QEMU's emulation: slow, no GPUs)
  bool gpu_passthrough = false;  // the node's GPUs can be given to VMs (or are simulated)
  std::string note;              // why they cannot, or what the operator chose; "" if fine
  bool operator==(const VmCapability&) const = default;
};

template <class V, schema::Of<VmCapability> S>
void fields(V& visit, S& x) {
  visit("accelerator", x.accelerator);
  visit("gpu_passthrough", x.gpu_passthrough);
  visit("note", x.note, schema::kOptional);
}

// Whether VM work may be placed on a node with this capability: it runs VMs and can give them
// its GPUs.
inline bool runs_vm_work(const std::optional<VmCapability>& vm) {
  return vm && vm->gpu_passthrough;
}

enum class NodeState { kReady, kDown };
std::string_view to_string(NodeState state);
bool parse_node_state(std::string_view text, NodeState* out);
inline bool from_string(std::string_view text, NodeState* out) {
  return parse_node_state(text, out);
}

struct Node {
  std::string id;
  std::string name;     // hostname as the agent reported it
  std::string address;  // where the node's peers reach it (MASTER_ADDR); empty: the name
  std::vector<Gpu> gpus;
  int cpu_count = 0;
  int64_t memory_mb = 0;
  int64_t disk_gb = 0;                        // free disk for workloads; 0: not tracked
  std::string fabric_group;                   // nodes behind one InfiniBand switch; empty: none
  std::map<std::string, std::string> labels;  // region, zone, edge, ... (operator-set on the agent)
  bool cordoned = false;                      // an operator said: place nothing new here
  bool simulated = false;                     // GPUs are simulated (no NVML on the host)
  bool container_runtime = false;             // the agent has a container engine (images run)
  // What the agent found of the NVIDIA Container Toolkit; absent: not checked (no container
  // engine, simulated GPUs, an older agent). Without GPU containers, container_runtime is false.
  std::optional<ContainerToolkit> container_toolkit;
  // How the agent keeps tenants' process runs apart: "sandbox" (a user, namespaces and cgroups
  // per run), or "none"/"" (one tenant's process runs at a time); the note says why or what lacks.
  std::string isolation;
  std::string isolation_note;
  std::optional<VmCapability> vm;  // absent: the agent runs no VMs
  // The address the node registered from; with Options::bind_node_credentials, the only one its
  // credential is accepted from.
  std::string registered_from;
  std::string agent_version;
  NodeState state = NodeState::kReady;
  Timestamp registered_at{};
  Timestamp last_heartbeat{};
  // Bumped whenever the node's desired workload set changes; the agent watches it.
  int64_t generation = 1;
  std::string credential_hash;  // hash of the node's own secret, issued at registration
  // By GPU UUID: the double-bit ECC count last seen in a report. Persisted (it changes only on an
  // error or a driver reload) so that a rise while the server was down still quarantines the GPU.
  std::map<std::string, int64_t> ecc_dbe_seen;
  // Its agent answers benchmark requests (NodeRegistration::benchmarks).
  bool answers_benchmarks = false;
  // The benchmark the node is asked for and has not answered (model/benchmark.h); its GPUs get
  // no new work meanwhile.
  std::optional<BenchmarkRequest> benchmark;
};

// Topology members are absent from records and registrations made before it was reported.
template <class V, schema::Of<Gpu> S>
void fields(V& visit, S& x) {
  visit("index", x.index);
  visit("memory_mb", x.memory_mb);
  visit("name", x.name);
  visit("numa_node", x.numa_node, schema::kOptional);
  visit("nvlink_domain", x.nvlink_domain, schema::kOptional);
  visit("pci_address", x.pci_address, schema::kOmitEmpty);
  visit("pcie_switch", x.pcie_switch, schema::kOptional);
  visit("type", x.type);
  visit("uuid", x.uuid);
}

template <class V, schema::Of<Node> S>
void fields(V& visit, S& x) {
  visit("address", x.address, schema::kOptional);
  visit("agent_version", x.agent_version);
  visit("answers_benchmarks", x.answers_benchmarks, schema::kOmitEmpty);
  visit("benchmark", x.benchmark, schema::kOmitEmpty);
  visit("container_runtime", x.container_runtime, schema::kOptional);
  visit("container_toolkit", x.container_toolkit, schema::kOmitEmpty);
  visit("cordoned", x.cordoned, schema::kOptional);
  visit("cpu_count", x.cpu_count);
  visit("credential_hash", x.credential_hash);
  visit("disk_gb", x.disk_gb, schema::kOptional);
  visit("ecc_dbe_seen", x.ecc_dbe_seen, schema::kOptional);
  visit("fabric_group", x.fabric_group, schema::kOptional);
  visit("generation", x.generation);
  visit("gpus", x.gpus);
  visit("id", x.id);
  visit("isolation", x.isolation, schema::kOptional);
  visit("isolation_note", x.isolation_note, schema::kOptional);
  visit("labels", x.labels, schema::kOptional);
  visit("last_heartbeat", x.last_heartbeat);
  visit("memory_mb", x.memory_mb);
  visit("name", x.name);
  visit("registered_at", x.registered_at);
  visit("registered_from", x.registered_from, schema::kOptional);
  visit("simulated", x.simulated);
  visit("state", x.state);
  visit("vm", x.vm, schema::kOmitEmpty);
}

}  // namespace gpurent::model
