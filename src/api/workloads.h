// The API's bodies for instances and jobs (docs/api.md; docs/openapi.json components Instance,
// InstanceCreate, Job, JobCreate, JobTask): what a client sends to create one and what it is
// shown. The server reads the requests and writes the views by these tables
// (server/request_bodies.h, server/views.h), the C++ SDK sends and reads them
// (client/api_client.h), and api/openapi_schema_test.cc holds them to docs/openapi.json.
//
// A request's members are optional where the client may leave them out (absent or null: the
// server's default), and a client leaves out those it does not set; a view's members are always
// there, null where std::optional is empty.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "api/json_form.h"
#include "common/clock.h"
#include "common/field_table.h"
#include "common/money.h"
#include "model/instance.h"
#include "model/job.h"
#include "model/template.h"
#include "model/volume.h"

namespace gpurent::api {

// A command as a shell line (run through /bin/sh -c) or as argv.
using Command = std::variant<std::string, std::vector<std::string>>;

// What an instance, or each member of a job, runs and needs: the members POST /v1/instances and
// POST /v1/jobs share.
struct WorkloadRequest {
  std::optional<std::string> name;
  // One exact type ("any": every type), or a list of acceptable types: one of the two.
  std::optional<std::string> gpu_type;
  std::optional<std::vector<std::string>> gpu_types;
  std::optional<int64_t> min_gpu_memory_gb;
  std::optional<int64_t> gpu_count;
  std::optional<int64_t> gpu_milli;
  std::optional<int64_t> gpu_memory_gb;
  std::optional<int64_t> cpu;
  std::optional<int64_t> memory_gb;
  std::optional<int64_t> disk_gb;
  std::optional<std::map<std::string, std::string>> node_selector;
  std::optional<std::string> image;
  std::optional<Command> command;
  std::optional<std::map<std::string, std::string>> env;
  std::optional<model::PricingModel> pricing;
  std::optional<std::string> reservation_id;
  std::optional<int64_t> priority;
  std::optional<int64_t> max_runtime_s;
  std::optional<std::string> template_name;
  std::optional<model::RuntimeChoice> runtime;
  std::optional<std::vector<model::VolumeMount>> volumes;
  std::optional<std::vector<std::string>> services;
  std::optional<std::vector<std::string>> ssh_keys;
  std::optional<model::RestartPolicy> restart_policy;
  std::optional<Micros> max_price_micros;
  std::optional<std::string> workdir;
  std::optional<bool> queue;
  std::optional<bool> wait_for_capacity;
};

template <class V, schema::Of<WorkloadRequest> S>
void fields(V& visit, S& x) {
  visit("name", x.name, schema::kOmitEmpty);
  visit("gpu_type", x.gpu_type, schema::kOmitEmpty);
  visit("gpu_types", x.gpu_types, schema::kOmitEmpty);
  visit("min_gpu_memory_gb", x.min_gpu_memory_gb, schema::kOmitEmpty);
  visit("gpu_count", x.gpu_count, schema::kOmitEmpty);
  visit("gpu_milli", x.gpu_milli, schema::kOmitEmpty);
  visit("gpu_memory_gb", x.gpu_memory_gb, schema::kOmitEmpty);
  visit("cpu", x.cpu, schema::kOmitEmpty);
  visit("memory_gb", x.memory_gb, schema::kOmitEmpty);
  visit("disk_gb", x.disk_gb, schema::kOmitEmpty);
  visit("node_selector", x.node_selector, schema::kOmitEmpty);
  visit("image", x.image, schema::kOmitEmpty);
  visit("command", x.command, schema::kOmitEmpty);
  visit("env", x.env, schema::kOmitEmpty);
  visit("pricing", x.pricing, schema::kOmitEmpty);
  visit("reservation_id", x.reservation_id, schema::kOmitEmpty);
  visit("priority", x.priority, schema::kOmitEmpty);
  visit("max_runtime_s", x.max_runtime_s, schema::kOmitEmpty);
  visit("template", x.template_name, schema::kOmitEmpty);
  visit("runtime", x.runtime, schema::kOmitEmpty);
  visit("volumes", x.volumes, schema::kOmitEmpty);
  visit("services", x.services, schema::kOmitEmpty);
  visit("ssh_keys", x.ssh_keys, schema::kOmitEmpty);
  visit("restart_policy", x.restart_policy, schema::kOmitEmpty);
  visit("max_price_micros", x.max_price_micros, schema::kOmitEmpty);
  visit("workdir", x.workdir, schema::kOmitEmpty);
  visit("queue", x.queue, schema::kOmitEmpty);
  visit("wait_for_capacity", x.wait_for_capacity, schema::kOmitEmpty);
}

// POST /v1/instances (and POST /v1/estimate).
struct InstanceCreate {
  WorkloadRequest workload;
};

template <class V, schema::Of<InstanceCreate> S>
void fields(V& visit, S& x) {
  fields(visit, x.workload);
}

// POST /v1/estimate's "work": training to time and price from the measured figures of the GPU
// type the launch would get (a ResNet-50 run recorded for it: POST /v1/training-benchmarks).
struct EstimateWork {
  std::string model;                        // "resnet50"
  int64_t epochs = 0;                       // passes over the data
  std::optional<int64_t> images_per_epoch;  // default: ImageNet-1k's training set
  std::optional<std::string> precision;     // "amp" (the default) or "fp32"
};

template <class V, schema::Of<EstimateWork> S>
void fields(V& visit, S& x) {
  visit("model", x.model, schema::kRequired);
  visit("epochs", x.epochs, schema::kRequired);
  visit("images_per_epoch", x.images_per_epoch, schema::kOmitEmpty);
  visit("precision", x.precision, schema::kOmitEmpty);
}

// POST /v1/estimate: a launch's fields, and the work it would do.
struct EstimateCreate {
  WorkloadRequest workload;
  std::optional<EstimateWork> work;
};

template <class V, schema::Of<EstimateCreate> S>
void fields(V& visit, S& x) {
  fields(visit, x.workload);
  visit("work", x.work, schema::kOmitEmpty);
}

// POST /v1/jobs: what each member runs, and the job's shape.
struct JobCreate {
  WorkloadRequest workload;
  std::optional<int64_t> nodes;  // members per task
  std::optional<int64_t> array;  // tasks
  std::optional<int64_t> retries;
};

template <class V, schema::Of<JobCreate> S>
void fields(V& visit, S& x) {
  // A job runs a command to completion: it must say which.
  auto command_required = [&visit](std::string_view name, auto& member,
                                   schema::Presence presence = schema::kRequired) {
    visit(name, member, name == "command" ? schema::kRequired : presence);
  };
  fields(command_required, x.workload);
  visit("nodes", x.nodes, schema::kOmitEmpty);
  visit("array", x.array, schema::kOmitEmpty);
  visit("retries", x.retries, schema::kOmitEmpty);
}

// What a workload asked for, as an instance or a job shows it.
struct WorkloadView {
  std::string name;
  // The single type asked for, or "any"; an instance shows the type it runs (or last ran) on.
  std::string gpu_type;
  std::vector<std::string> gpu_types;
  int min_gpu_memory_gb = 0;
  int gpu_count = 1;
  int gpu_milli = model::kMilliPerGpu;
  int gpu_memory_gb = 0;
  int cpu = 0;
  int memory_gb = 0;
  int disk_gb = 0;
  std::map<std::string, std::string> node_selector;
  std::optional<std::string> template_name;
  std::optional<std::string> image;
  std::vector<std::string> command;
  // With an image: what a node without a container engine runs instead.
  std::vector<std::string> process_command;
  // Where it runs: "process", "container", "auto" (the image where the node has an engine, else
  // the process form) or "vm".
  std::string runtime;
  std::map<std::string, std::string> env;
  model::PricingModel pricing = model::PricingModel::kOnDemand;
  model::RestartPolicy restart_policy = model::RestartPolicy::kOnNodeFailure;
  std::optional<std::string> reservation_id;
  int priority = 0;
  std::optional<int64_t> max_runtime_s;
  std::optional<Micros> max_price_micros;
  std::vector<model::VolumeMount> volumes;
  std::vector<std::string> services;
  std::vector<std::string> ssh_keys;
  std::optional<std::string> workdir;
};

template <class V, schema::Of<WorkloadView> S>
void fields(V& visit, S& x) {
  visit("name", x.name);
  visit("gpu_type", x.gpu_type);
  visit("gpu_types", x.gpu_types);
  visit("min_gpu_memory_gb", x.min_gpu_memory_gb);
  visit("gpu_count", x.gpu_count);
  visit("gpu_milli", x.gpu_milli);
  visit("gpu_memory_gb", x.gpu_memory_gb);
  visit("cpu", x.cpu);
  visit("memory_gb", x.memory_gb);
  visit("disk_gb", x.disk_gb);
  visit("node_selector", x.node_selector);
  visit("template", x.template_name);
  visit("image", x.image);
  visit("command", x.command);
  visit("process_command", x.process_command);
  visit("runtime", x.runtime);
  visit("env", x.env);
  visit("pricing", x.pricing);
  visit("restart_policy", x.restart_policy);
  visit("reservation_id", x.reservation_id);
  visit("priority", x.priority);
  visit("max_runtime_s", x.max_runtime_s);
  visit("max_price_micros", x.max_price_micros);
  visit("volumes", x.volumes);
  visit("services", x.services);
  visit("ssh_keys", x.ssh_keys);
  visit("workdir", x.workdir);
}

struct Instance {
  std::string id;
  std::string tenant_id;
  model::InstanceState state = model::InstanceState::kPending;
  WorkloadView workload;
  bool queue = true;
  bool wait_for_capacity = false;
  std::optional<std::string> node_id;  // null until placed
  std::vector<std::string> gpus;       // UUIDs of the GPUs it holds
  int64_t run = 0;                     // the current run (0 before the first start)
  Timestamp created_at{};
  std::optional<Timestamp> started_at;
  std::optional<Timestamp> ended_at;
  std::optional<int> exit_code;
  std::string reason;
  bool start_requested = false;  // a start asked for while it was stopping
  // A started instance waits for this node, which keeps its files; null: any node will do.
  std::optional<std::string> start_on_node;
  // A job's member: its job, task index and rank in the task's gang.
  std::optional<std::string> job_id;
  std::optional<int> job_task;
  std::optional<int> job_rank;
  std::optional<Micros> price_per_gpu_hour_micros;
  std::string currency;
};

template <class V, schema::Of<Instance> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("tenant_id", x.tenant_id);
  visit("state", x.state);
  fields(visit, x.workload);
  visit("queue", x.queue);
  visit("wait_for_capacity", x.wait_for_capacity);
  visit("node_id", x.node_id);
  visit("gpus", x.gpus);
  visit("run", x.run);
  visit("created_at", x.created_at);
  visit("started_at", x.started_at);
  visit("ended_at", x.ended_at);
  visit("exit_code", x.exit_code);
  visit("reason", x.reason);
  visit("start_requested", x.start_requested);
  visit("start_on_node", x.start_on_node);
  visit("job_id", x.job_id);
  visit("job_task", x.job_task);
  visit("job_rank", x.job_rank);
  visit("price_per_gpu_hour_micros", x.price_per_gpu_hour_micros);
  visit("currency", x.currency);
}

struct JobTask {
  int index = 0;
  model::JobState state = model::JobState::kQueued;
  int attempts = 0;
  std::optional<int> exit_code;
  std::vector<std::string> instances;  // its members, by rank
};

template <class V, schema::Of<JobTask> S>
void fields(V& visit, S& x) {
  visit("index", x.index);
  visit("state", x.state);
  visit("attempts", x.attempts);
  visit("exit_code", x.exit_code);
  visit("instances", x.instances);
}

struct Job {
  std::string id;
  std::string tenant_id;
  model::JobState state = model::JobState::kQueued;
  WorkloadView workload;  // what each member runs
  int nodes = 1;
  int array = 1;
  int retries = 0;
  Timestamp created_at{};
  std::optional<Timestamp> started_at;
  std::optional<Timestamp> ended_at;
  std::string reason;
  std::map<std::string, int> task_counts;  // by state
  // Every task, unless the array is larger than a view lists (GET /v1/jobs/{id}?tasks=1 lists
  // them all).
  std::optional<std::vector<JobTask>> tasks;
};

template <class V, schema::Of<Job> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("tenant_id", x.tenant_id);
  visit("state", x.state);
  fields(visit, x.workload);
  visit("nodes", x.nodes);
  visit("array", x.array);
  visit("retries", x.retries);
  visit("created_at", x.created_at);
  visit("started_at", x.started_at);
  visit("ended_at", x.ended_at);
  visit("reason", x.reason);
  visit("task_counts", x.task_counts);
  visit("tasks", x.tasks, schema::kOmitEmpty);
}

// POST /v1/instances/{id}/services/{service}/ticket: a one-time login to a service of the
// instance; the server's URL joined with path opens it in a browser.
struct ServiceTicket {
  std::string path;  // /i/<id>/<service>/?login=<ticket>
  Timestamp expires_at{};
};

template <class V, schema::Of<ServiceTicket> S>
void fields(V& visit, S& x) {
  visit("path", x.path);
  visit("expires_at", x.expires_at);
}

// POST /v1/uploads: an upload of `size` bytes whose whole has this SHA-256.
struct UploadCreate {
  int64_t size = 0;
  std::string sha256;  // lowercase hex
};

template <class V, schema::Of<UploadCreate> S>
void fields(V& visit, S& x) {
  visit("size", x.size);
  visit("sha256", x.sha256);
}

// A tenant's upload (a tar.gz), sent in pieces and resumable from `received`.
struct Upload {
  std::string id;
  int64_t size = 0;
  std::string sha256;
  int64_t received = 0;
  bool complete = false;  // every byte came and the SHA-256 matched
  Timestamp created_at{};
};

template <class V, schema::Of<Upload> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("size", x.size);
  visit("sha256", x.sha256);
  visit("received", x.received);
  visit("complete", x.complete);
  visit("created_at", x.created_at);
}

}  // namespace gpurent::api
