// The messages between the server and a node agent (routes under /v1/agent/).
//
// Level-triggered: the server publishes, per node, the complete desired set of workloads with a
// generation number; the agent converges the node to it and reports the complete actual set. Any
// message may be lost or repeated without harm, because each one states the whole truth.
//
//   POST /v1/agent/register   Bearer <join token>   NodeRegistration -> RegistrationResult
//   GET  /v1/agent/desired?after=G&watch=true      Bearer <node credential> -> a stream
//        (application/x-ndjson, chunked: one DesiredState per line, the first as soon as the
//        node's generation is > G, then one for each later generation; an empty line after each
//        kWatchKeepalive without one, so that both sides notice a peer that is gone. What the
//        agents use: one request carries every change, where a long poll took one per change)
//   GET  /v1/agent/desired?after=G&wait_s=S        Bearer <node credential> -> DesiredState
//        (the long poll: answers as soon as the node's generation is > G, or after S seconds
//        with the same one)
//   POST /v1/agent/report     Bearer <node credential>   NodeReport -> {"generation": G}
//   POST /v1/agent/logs?instance=I&run=R&offset=O  Bearer <node credential>   raw bytes
//        -> {"size": N} (the server's size of that run's log; the agent resends from there)
//
// The other direction: the agent serves a node API (agent/node_api.h) whose address and secret it
// states in every NodeReport; the server reaches the node's workloads through it.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/field_table.h"
#include "common/json.h"
#include "model/benchmark.h"
#include "model/json_form.h"
#include "model/node.h"
#include "model/telemetry.h"
#include "model/volume.h"

namespace gpurent::model {

// The longest a desired-state watch stays silent: it then sends an empty line.
inline constexpr std::chrono::seconds kWatchKeepalive{15};

struct NodeRegistration {
  std::string name;
  std::vector<Gpu> gpus;
  int cpu_count = 0;
  int64_t memory_mb = 0;
  int64_t disk_gb = 0;
  std::string fabric_group;
  std::map<std::string, std::string> labels;
  std::string address;  // how peers reach the node; empty: its name
  bool simulated = false;
  bool container_runtime = false;  // the agent was given a container engine
  std::optional<VmCapability> vm;  // the agent runs VMs (Node::vm)
  std::string agent_version;
  // How the node keeps tenants' process runs apart (Node::isolation): "sandbox" or "none";
  // isolation_note says why not, or what the sandbox lacks (no cgroup limits). Empty from an
  // older agent, which sandboxes nothing.
  std::string isolation;
  std::string isolation_note;
  // The agent answers benchmark requests (model/benchmark.h). An older agent does not: its node
  // is never asked, rather than having its GPUs held until a request times out.
  bool benchmarks = false;
  // Set by the server from the connection (never read from the message): Node::registered_from.
  std::string registered_from;
};

// Only name and gpus are required: an older agent sends less. registered_from is not in it.
template <class V, schema::Of<NodeRegistration> S>
void fields(V& visit, S& x) {
  visit("address", x.address, schema::kOptional);
  visit("agent_version", x.agent_version, schema::kOptional);
  visit("benchmarks", x.benchmarks, schema::kOmitEmpty);
  visit("container_runtime", x.container_runtime, schema::kOptional);
  visit("cpu_count", x.cpu_count, schema::kOptional);
  visit("disk_gb", x.disk_gb, schema::kOptional);
  visit("fabric_group", x.fabric_group, schema::kOptional);
  visit("gpus", x.gpus);
  visit("isolation", x.isolation, schema::kOptional);
  visit("isolation_note", x.isolation_note, schema::kOptional);
  visit("labels", x.labels, schema::kOptional);
  visit("memory_mb", x.memory_mb, schema::kOptional);
  visit("name", x.name);
  visit("simulated", x.simulated, schema::kOptional);
  visit("vm", x.vm, schema::kOmitEmpty);
}

struct RegistrationResult {
  std::string node_id;
  std::string credential;  // the node's secret; the agent keeps it in its data directory
};

template <class V, schema::Of<RegistrationResult> S>
void fields(V& visit, S& x) {
  visit("credential", x.credential);
  visit("node_id", x.node_id);
}

// A job member's place in its job (model/job.h), as its node is told: the agent gives the process
// the platform's variables from it (job_member_env). Sent instead of the variables themselves:
// fifteen strings per member made most of an array's desired states.
struct JobMemberPlacement {
  std::string job_id;
  int index = 0;       // the task's index in the array
  int array_size = 1;  // tasks in the array
  int nodes = 1;       // members of each task: its gang
  int rank = 0;        // this member's node rank in the gang
  int gpus_per_node = 1;
  std::string master_address;  // where the gang's rank 0 runs
  int master_port = 0;
};

template <class V, schema::Of<JobMemberPlacement> S>
void fields(V& visit, S& x) {
  visit("array_size", x.array_size);
  visit("gpus_per_node", x.gpus_per_node);
  visit("id", x.job_id);
  visit("index", x.index);
  visit("master_addr", x.master_address);
  visit("master_port", x.master_port);
  visit("nodes", x.nodes);
  visit("rank", x.rank);
}

// The variables the platform gives a job member's process: GPURENT_JOB_ID, GPURENT_ARRAY_INDEX and
// _SIZE, and torchrun's (one launcher per node, LOCAL_WORLD_SIZE processes each: MASTER_ADDR,
// MASTER_PORT, WORLD_SIZE, LOCAL_WORLD_SIZE, NNODES, NODE_RANK, RANK, the global rank of the node's
// first process; and the PET_* variables that configure a bare `torchrun`).
std::map<std::string, std::string> job_member_env(const JobMemberPlacement& placement);

struct WorkloadSpec {
  std::string instance_id;
  // The instance's tenant: its runs share a group (volumes), and a node that cannot sandbox
  // process runs runs one tenant's at a time (docs/runtime.md). Empty from an older server.
  std::string tenant_id;
  int64_t run = 0;
  bool should_run = true;  // false: stop it (SIGTERM, then SIGKILL after the grace period)
  // A container image to run the command in (the container runtime); empty: a plain process.
  std::string image;
  // Run the command in a virtual machine booted from the node's guest image (the VM runtime);
  // never with an image.
  bool vm = false;
  std::vector<std::string> ssh_keys;  // a VM's cloud-init user's (InstanceSpec::ssh_keys)
  std::vector<std::string> command;   // in a container, empty means the image's own command
  std::map<std::string, std::string> env;
  std::vector<std::string> gpus;  // UUIDs, in the order CUDA_VISIBLE_DEVICES lists them
  int cpu = 0;
  int memory_gb = 0;
  // A VM booted from a cloud image: its root disk grows to this size (InstanceSpec::disk_gb);
  // 0: the image's size.
  int disk_gb = 0;
  // Volumes to mount: their data is <data_dir>/volumes/<volume_id>/ on the node, created on first
  // use (docs/runtime.md says how each runtime makes it reachable at mount_path).
  std::vector<VolumeMount> volumes;
  // HTTP services it serves (InstanceSpec::services): the agent gives each a loopback port.
  std::vector<std::string> services;
  // Set for a job member; its variables go on top of env (agent/runtime/runtime.h).
  std::optional<JobMemberPlacement> job;
  // An upload to unpack into the instance's home before its first start (InstanceSpec::workdir);
  // the agent fetches it with GET /v1/agent/upload?id=. "": none.
  std::string workdir;
};

// What an older server leaves out is optional.
template <class V, schema::Of<WorkloadSpec> S>
void fields(V& visit, S& x) {
  visit("command", x.command);
  visit("cpu", x.cpu, schema::kOptional);
  visit("disk_gb", x.disk_gb, schema::kOptional);
  visit("env", x.env);
  visit("gpus", x.gpus);
  visit("image", x.image, schema::kOptional);
  visit("instance_id", x.instance_id);
  visit("job", x.job, schema::kOmitEmpty);
  visit("memory_gb", x.memory_gb, schema::kOptional);
  visit("run", x.run);
  visit("services", x.services, schema::kOptional);
  visit("should_run", x.should_run);
  visit("ssh_keys", x.ssh_keys, schema::kOmitEmpty);
  visit("tenant_id", x.tenant_id, schema::kOptional);
  visit("vm", x.vm, schema::kOmitEmpty);
  visit("volumes", x.volumes, schema::kOptional);
  visit("workdir", x.workdir, schema::kOptional);
}

// The largest upload a workload unpacks (WorkloadSpec::workdir): code and small data; larger data
// belongs in a volume.
inline constexpr int64_t kMaxWorkdirBytes = int64_t{256} << 20;

struct DesiredState {
  std::string node_id;
  int64_t generation = 0;
  std::vector<WorkloadSpec> workloads;
  // Every volume that lives on this node and is not deleted, in id order, whether mounted now or
  // not. The agent deletes the data of a volume that an earlier desired state listed and this
  // one does not (docs/runtime.md: volumes).
  std::vector<std::string> volumes;
  // Every instance whose files (its home, a VM's root disk) live on this node and that is not
  // deleted, in id order: those placed here now and those stopped after they last ran here. The
  // agent deletes the files of an instance that an earlier desired state listed and a later one
  // does not (agent/janitor.h). nullopt from an older server: the agent deletes none.
  std::optional<std::vector<std::string>> instances;
  // GPUs to measure (model/benchmark.h), while the server waits for their figures.
  std::optional<BenchmarkRequest> benchmark;
};

template <class V, schema::Of<DesiredState> S>
void fields(V& visit, S& x) {
  visit("benchmark", x.benchmark, schema::kOmitEmpty);
  visit("generation", x.generation);
  visit("instances", x.instances, schema::kOmitEmpty);
  visit("node_id", x.node_id);
  visit("volumes", x.volumes, schema::kOptional);
  visit("workloads", x.workloads);
}

enum class WorkloadPhase { kStarting, kRunning, kExited };
std::string_view to_string(WorkloadPhase phase);
bool parse_workload_phase(std::string_view text, WorkloadPhase* out);
inline bool from_string(std::string_view text, WorkloadPhase* out) {
  return parse_workload_phase(text, out);
}

struct WorkloadStatus {
  std::string instance_id;
  int64_t run = 0;
  WorkloadPhase phase = WorkloadPhase::kStarting;
  std::optional<int> exit_code;  // for kExited: the exit status, or 128 + signal
  std::string message;           // e.g. why it could not be started
  // For kExited: its command never ran (it could not be executed, its image pulled, its sandbox
  // made): billed as what ran, which is nothing, with no minimum duration.
  bool never_started = false;
};

template <class V, schema::Of<WorkloadStatus> S>
void fields(V& visit, S& x) {
  visit("exit_code", x.exit_code, schema::kOptional);
  visit("instance_id", x.instance_id);
  visit("message", x.message, schema::kOptional);
  visit("never_started", x.never_started, schema::kOmitEmpty);
  visit("phase", x.phase);
  visit("run", x.run);
}

struct NodeReport {
  int64_t applied_generation = 0;  // the desired generation the agent has converged to
  std::vector<WorkloadStatus> workloads;
  // Where the agent's node API listens ("host:port") and the secret the server presents to it
  // (Authorization: Bearer). Sent with every report, so a restarted server or agent is in step
  // again after one report; empty: the node serves no node API (a simulated node).
  std::string node_api_address;
  std::string node_api_secret;
  // Whether the agent has a container engine now (NodeRegistration::container_runtime, kept up to
  // date: an agent restarted with or without --container-socket says so). Absent: unchanged.
  std::optional<bool> container_runtime;
  // What the agent found of the NVIDIA Container Toolkit (Node::container_toolkit), with every
  // report that has container_runtime; absent: not checked (no engine, simulated GPUs).
  std::optional<ContainerToolkit> container_toolkit;
  // What the agent can do with VMs (Node::vm), with every report that has container_runtime;
  // absent from such a report: it runs none.
  std::optional<VmCapability> vm;
  // GPU samples and XID events since the last report the server took (model/telemetry.h);
  // omitted from the JSON when empty.
  TelemetryBatch telemetry;
  // The agent's wall clock when it sent the report (Unix ms; agent::routes::report_call stamps
  // it): the server measures the agent's clock skew from it. Absent: not measured.
  std::optional<int64_t> sent_at_ms;
  // The outcome of the benchmark the agent last finished (model/benchmark.h), while the desired
  // state still asks for it.
  std::optional<BenchmarkOutcome> benchmark;
};

// The telemetry is its frame's text (telemetry_text), left out when there is nothing to send.
template <class V, schema::Of<NodeReport> S>
void fields(V& visit, S& x) {
  visit("applied_generation", x.applied_generation);
  visit("benchmark", x.benchmark, schema::kOmitEmpty);
  visit("container_runtime", x.container_runtime, schema::kOmitEmpty);
  visit("container_toolkit", x.container_toolkit, schema::kOmitEmpty);
  visit("node_api_address", x.node_api_address, schema::kOptional);
  visit("node_api_secret", x.node_api_secret, schema::kOptional);
  visit("sent_at_ms", x.sent_at_ms, schema::kOmitEmpty);
  visit("telemetry", x.telemetry, schema::kOmitEmpty);
  visit("vm", x.vm, schema::kOmitEmpty);
  visit("workloads", x.workloads);
}

// Their JSON forms come from the tables above (model/json_form.h). A DesiredState is written by
// desired_state_json (codec.h) and read back by read_desired_state (desired_state_json.h), a
// NodeReport by node_report_json (codec.h) and read_node_report (node_report_json.h), none of them
// through a JSON tree.

// Decodes a message, turning nlohmann's exceptions into an Error (code "invalid_message").
template <class T>
Result<T> decode_message(const Json& j) {
  try {
    return j.get<T>();
  } catch (const std::exception& e) {  // nlohmann and our enum parsers
    return fail(Error::invalid("invalid_message", e.what()));
  }
}

}  // namespace gpurent::model
