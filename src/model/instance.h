// A rented instance: a workload with GPUs that runs until the tenant stops or removes it.
//
// Life cycle (the controller enforces the edges):
//   pending -> starting -> running -> stopping -> stopped | failed | preempted
//   any state -> terminated (DELETE; through stopping when it runs)
//   stopped | failed | preempted -> pending (start again: a new run, maybe on another node)
//   running -> stopping -> pending (moved: its node is drained)
// Each start opens a new run; reports from an older run are ignored, which fences stale agents.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/field_table.h"
#include "common/json.h"
#include "common/money.h"
#include "model/volume.h"

namespace gpurent::model {

enum class InstanceState {
  kPending,
  kStarting,
  kRunning,
  kStopping,
  kStopped,
  kFailed,
  kPreempted,  // stopped to make room for higher-priority work; may be started again
  kTerminated
};
std::string_view to_string(InstanceState state);
bool parse_instance_state(std::string_view text, InstanceState* out);
inline bool from_string(std::string_view text, InstanceState* out) {
  return parse_instance_state(text, out);
}
// Holds GPUs on a node (from placement until the agent confirms the process is gone).
bool holds_gpus(InstanceState state);

// The pricing model also sets the scheduling class: reserved work comes before on-demand work,
// which comes before spot work; on-demand and reserved work may preempt spot work.
enum class PricingModel { kOnDemand, kSpot, kReserved };
std::string_view to_string(PricingModel pricing);
bool parse_pricing_model(std::string_view text, PricingModel* out);
inline bool from_string(std::string_view text, PricingModel* out) {
  return parse_pricing_model(text, out);
}
// Higher runs first.
int scheduling_class(PricingModel pricing);

// What happens to running work when its node fails (stops reporting) or its GPU is quarantined.
// kOnNodeFailure: it is moved — stopped there and placed again on healthy capacity, keeping its
// id (a new run); kNever: it waits for its node to come back. The default depends on the pricing
// (default_restart_policy): spot work is cheap because it may be lost, so it is not moved.
enum class RestartPolicy { kOnNodeFailure, kNever };
std::string_view to_string(RestartPolicy policy);
bool parse_restart_policy(std::string_view text, RestartPolicy* out);
inline bool from_string(std::string_view text, RestartPolicy* out) {
  return parse_restart_policy(text, out);
}
RestartPolicy default_restart_policy(PricingModel pricing);

inline constexpr int kMilliPerGpu = 1000;

struct InstanceSpec {
  std::string name;
  // Acceptable GPU types, any of which will do; empty: any type with at least
  // min_gpu_memory_gb of memory per GPU.
  std::vector<std::string> gpu_types;
  int min_gpu_memory_gb = 0;
  int gpu_count = 1;
  int gpu_milli = kMilliPerGpu;  // below 1000 (with gpu_count 1): a share of one GPU
  int gpu_memory_gb = 0;         // with a share: the GPU memory it needs
  int cpu = 0;                   // cores; 0 = no explicit request
  int memory_gb = 0;             // 0 = no explicit request
  int disk_gb = 0;               // 0 = no explicit request
  std::map<std::string, std::string> node_selector;  // labels the node must carry
  // A container image to run in (the node's container runtime); empty: a plain process on the
  // node, with the host's software.
  std::string image;
  std::vector<std::string> command;  // argv; a string command is run through /bin/sh -c
  // With an image: what a node without a container engine runs instead (a template's process
  // form). Empty: the work needs a node with a container engine.
  std::vector<std::string> process_command;
  // Run in a virtual machine on a node that runs them (Node::vm), booted from the node's guest
  // image: the command runs in the guest, the GPUs are passed through. Never with an image.
  bool vm = false;
  // OpenSSH public keys ("ssh-ed25519 AAAA... comment"), for runtime vm: a cloud image's
  // cloud-init lets them log in as the user "gpurent" (docs/vm-runtime.md). At most kMaxSshKeys.
  std::vector<std::string> ssh_keys;
  std::string template_name;  // the template the spec was made from, for people; "" for none
  std::map<std::string, std::string> env;
  PricingModel pricing = PricingModel::kOnDemand;
  RestartPolicy restart_policy = RestartPolicy::kOnNodeFailure;
  int priority = 0;   // among the tenant's work of one class: higher is placed first
  bool queue = true;  // false: fail at once, with the reason, when it cannot be placed now
  // Queued even when no node of the cluster could hold it, empty (a node of that kind may join);
  // otherwise such a request is refused at submission, naming the rule it breaks.
  bool wait_for_capacity = false;
  std::optional<int64_t> max_runtime_s;  // declared limit: lets the work backfill
  // Spot work: the most it will pay per GPU-hour; above it the instance is interrupted (stopped
  // as preempted). nullopt: any price up to on-demand (the spot cap).
  std::optional<Micros> max_price;
  // Reserved work: the tenant's reservation whose held capacity it uses.
  std::string reservation_id;
  // The tenant's volumes mounted into every run (model/volume.h); they pin the work to the node
  // the volumes live on.
  std::vector<VolumeMount> volumes;
  // Names of the HTTP services the workload serves (each [a-z][a-z0-9-]{0,30}, at most
  // kMaxServices, unique): the node gives each a loopback port and the server proxies
  // /i/<id>/<name>/ to it (docs/runtime.md).
  std::vector<std::string> services;
  // An upload of the tenant's (a tar.gz, server/upload_store.h) unpacked into the instance's home
  // before its first run starts: the tenant's code and data (`--workdir DIR`). "": none.
  std::string workdir;
};

template <class V, schema::Of<InstanceSpec> S>
void fields(V& visit, S& x) {
  visit("command", x.command);
  visit("cpu", x.cpu);
  visit("disk_gb", x.disk_gb, schema::kOptional);
  visit("env", x.env);
  visit("gpu_count", x.gpu_count);
  visit("gpu_memory_gb", x.gpu_memory_gb, schema::kOptional);
  visit("gpu_milli", x.gpu_milli, schema::kOptional);
  visit("gpu_types", x.gpu_types, schema::kOptional);
  visit("image", x.image, schema::kOptional);
  visit("max_price", x.max_price, schema::kOptional);
  visit("max_runtime_s", x.max_runtime_s, schema::kOptional);
  visit("memory_gb", x.memory_gb);
  visit("min_gpu_memory_gb", x.min_gpu_memory_gb, schema::kOptional);
  visit("name", x.name);
  visit("node_selector", x.node_selector, schema::kOptional);
  visit("pricing", x.pricing);
  visit("priority", x.priority, schema::kOptional);
  visit("process_command", x.process_command, schema::kOptional);
  visit("queue", x.queue, schema::kOptional);
  visit("reservation_id", x.reservation_id, schema::kOptional);
  visit("restart_policy", x.restart_policy, schema::kOptional);
  visit("services", x.services, schema::kOptional);
  visit("ssh_keys", x.ssh_keys, schema::kOmitEmpty);
  visit("template", x.template_name, schema::kOptional);
  visit("vm", x.vm, schema::kOmitEmpty);
  visit("volumes", x.volumes, schema::kOptional);
  visit("wait_for_capacity", x.wait_for_capacity, schema::kOptional);
  visit("workdir", x.workdir, schema::kOptional);
}
// Where the spec runs: "vm", "process" (no image), "container" (an image only) or "auto" (an image
// with a process form: the node decides).
std::string_view runtime_of(const InstanceSpec& spec);

// Specs stored before type lists named one exact type (gpu_type), and before restart policies
// (the pricing's default).
void upgrade_older(const Json& j, InstanceSpec& v);

inline constexpr size_t kMaxSshKeys = 16;
inline constexpr size_t kMaxSshKeyLength = 8192;
// Whether `key` is one OpenSSH public key line: a key type, its base64, an optional comment;
// printable, no line break.
bool valid_ssh_public_key(std::string_view key);

inline constexpr size_t kMaxServices = 8;
inline constexpr size_t kMaxServiceNameLength = 31;
// Whether `name` may name a service: [a-z][a-z0-9-]{0,30}.
bool valid_service_name(std::string_view name);

// The type a spec names for people: the single acceptable type, or "any".
std::string requested_gpu_type(const InstanceSpec& spec);

struct Instance {
  std::string id;
  std::string tenant_id;
  InstanceSpec spec;
  InstanceState state = InstanceState::kPending;
  std::string node_id;            // set while placed
  std::vector<std::string> gpus;  // GPU UUIDs while placed
  std::string gpu_type;           // the type it was last placed on
  int gpu_milli = kMilliPerGpu;   // the share of each of its GPUs it holds
  Timestamp queued_at{};          // when it last entered the queue
  int64_t queue_sequence = 0;     // arrival order in the queue (first come first served); 0: none
  int64_t run = 0;                // number of the current run (0 before the first start)
  Timestamp created_at{};
  std::optional<Timestamp> started_at;  // start of the current run's running phase
  std::optional<Timestamp> ended_at;    // end of the last run
  std::optional<int> exit_code;
  std::string reason;                // why the instance is in its state, for people
  bool terminate_requested = false;  // DELETE while running: terminated once the process is gone
  bool preempt_requested = false;    // preempted once the process is gone
  bool requeue_requested = false;    // pending again once the process is gone (node drain)
  bool start_requested = false;      // started again once it has stopped (start while stopping)
  // A tenant's start waits for this node, which keeps the instance's files (its home, a VM's root
  // disk): only it will do. "" lets it go anywhere (a start with `anywhere`, work moved off a
  // failed or drained node). Cleared when it is placed or withdrawn (docs/runtime.md).
  std::string start_on_node;
  // Generation of the node's desired set that first contained this run; a report that has
  // applied that generation and does not list the run means the agent lost it.
  int64_t placed_generation = 0;
  // Set for the members of a job's tasks (see model/job.h).
  std::string job_id;
  int job_task = -1;
  int job_rank = 0;
  // A placed job member's gang rendezvous: its rank 0's node address and port, set at placement
  // (""/0 otherwise). The platform's variables follow from them and the job (job_member_placement).
  std::string master_address;
  int master_port = 0;
  // Increases with every change of the instance; caches of its view are keyed by it.
  int64_t revision = 0;
};

template <class V, schema::Of<Instance> S>
void fields(V& visit, S& x) {
  visit("created_at", x.created_at);
  visit("ended_at", x.ended_at, schema::kOptional);
  visit("exit_code", x.exit_code);
  visit("gpu_milli", x.gpu_milli, schema::kOptional);
  visit("gpu_type", x.gpu_type, schema::kOptional);
  visit("gpus", x.gpus);
  visit("id", x.id);
  visit("job_id", x.job_id, schema::kOptional);
  visit("job_rank", x.job_rank, schema::kOptional);
  visit("job_task", x.job_task, schema::kOptional);
  visit("master_addr", x.master_address, schema::kOptional);
  visit("master_port", x.master_port, schema::kOptional);
  visit("node_id", x.node_id);
  visit("placed_generation", x.placed_generation);
  visit("preempt_requested", x.preempt_requested, schema::kOptional);
  visit("queue_sequence", x.queue_sequence, schema::kOptional);
  visit("queued_at", x.queued_at, schema::kOptional);
  visit("reason", x.reason);
  visit("requeue_requested", x.requeue_requested, schema::kOptional);
  visit("revision", x.revision, schema::kOptional);
  visit("run", x.run);
  visit("spec", x.spec);
  visit("start_on_node", x.start_on_node, schema::kOmitEmpty);
  visit("start_requested", x.start_requested, schema::kOptional);
  visit("started_at", x.started_at, schema::kOptional);
  visit("state", x.state);
  visit("tenant_id", x.tenant_id);
  visit("terminate_requested", x.terminate_requested);
}
// Instances stored before they kept their queue time (their creation) and their placed type (the
// first they asked for).
void upgrade_older(const Json& j, Instance& v);

}  // namespace gpurent::model
