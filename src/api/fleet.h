// The API's bodies for nodes, offers, volumes and the event log (docs/api.md; docs/openapi.json
// components of the same names), as api/workloads.h says of instances.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/json_form.h"
#include "common/clock.h"
#include "common/field_table.h"
#include "common/json.h"
#include "common/money.h"
#include "model/node.h"
#include "model/tenant.h"
#include "model/volume.h"

namespace gpurent::api {

// A GPU out of service after a fatal fault (model/gpu_quarantine.h), as a node lists it.
struct GpuQuarantine {
  std::string uuid;
  int index = 0;
  std::string cause;  // "xid" or "ecc_dbe"
  std::optional<int64_t> xid;
  std::string message;
  Timestamp quarantined_at{};
  std::optional<Timestamp> released_at;
  std::optional<std::string> released_by;
};

template <class V, schema::Of<GpuQuarantine> S>
void fields(V& visit, S& x) {
  visit("uuid", x.uuid);
  visit("index", x.index);
  visit("cause", x.cause);
  visit("xid", x.xid);
  visit("message", x.message);
  visit("quarantined_at", x.quarantined_at);
  visit("released_at", x.released_at);
  visit("released_by", x.released_by);
}

// Measured figures (model/benchmark.h) in the units people read: TFLOPS and GB/s.
struct Figures {
  std::map<std::string, double> gemm_tflops;  // dense GEMM, by precision (fp32, tf32, fp16, ...)
  std::optional<double> training_tflops;      // BF16, else FP16, else FP32 (model::training_gflops)
  double memory_gbps = 0;
  double h2d_gbps = 0;
  double d2h_gbps = 0;
};

template <class V, schema::Of<Figures> S>
void fields(V& visit, S& x) {
  visit("gemm_tflops", x.gemm_tflops);
  visit("training_tflops", x.training_tflops);
  visit("memory_gbps", x.memory_gbps);
  visit("h2d_gbps", x.h2d_gbps);
  visit("d2h_gbps", x.d2h_gbps);
}

// A GPU's newest benchmark, and how it compares with its type.
struct GpuBenchmark {
  Timestamp at{};
  model::BenchmarkReason reason = model::BenchmarkReason::kOperator;
  bool simulated = false;
  Figures figures;
  // How far below its type's median, in percent, on its worst figure; null: not judged (fewer
  // than 3 GPUs of the type measured).
  std::optional<double> shortfall_percent;
  std::optional<std::string> shortfall_figure;
  bool slow = false;  // shortfall_percent above 10
};

template <class V, schema::Of<GpuBenchmark> S>
void fields(V& visit, S& x) {
  visit("at", x.at);
  visit("reason", x.reason);
  visit("simulated", x.simulated);
  visit("figures", x.figures);
  visit("shortfall_percent", x.shortfall_percent);
  visit("shortfall_figure", x.shortfall_figure);
  visit("slow", x.slow);
}

// A node asked to measure GPUs (POST /v1/nodes/{id}/benchmark, and Node.benchmark_pending).
struct BenchmarkRequest {
  int64_t id = 0;
  std::string node_id;
  std::vector<int> gpus;  // device indexes
  model::BenchmarkReason reason = model::BenchmarkReason::kOperator;
  Timestamp asked_at{};
};

template <class V, schema::Of<BenchmarkRequest> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("node_id", x.node_id);
  visit("gpus", x.gpus);
  visit("reason", x.reason);
  visit("asked_at", x.asked_at);
}

// One benchmark run of a GPU (GET /v1/nodes/{id}/benchmarks).
struct PeerCopy {
  int to = 0;  // the other GPU's device index
  double gbps = 0;
};

template <class V, schema::Of<PeerCopy> S>
void fields(V& visit, S& x) {
  visit("to", x.to);
  visit("gbps", x.gbps);
}

struct BenchmarkRun {
  Timestamp at{};
  model::BenchmarkReason reason = model::BenchmarkReason::kOperator;
  bool simulated = false;
  Figures figures;
  std::vector<PeerCopy> peers;
};

template <class V, schema::Of<BenchmarkRun> S>
void fields(V& visit, S& x) {
  visit("at", x.at);
  visit("reason", x.reason);
  visit("simulated", x.simulated);
  visit("figures", x.figures);
  visit("peers", x.peers);
}

// A training benchmark run of a GPU (model::TrainingRun): ResNet-50 images a second.
struct TrainingRun {
  Timestamp at{};
  std::string instance_id;
  std::string model;
  int batch = 0;
  int image_size = 0;
  std::string device;
  std::map<std::string, double> images_per_s;  // by precision: fp32, amp
};

template <class V, schema::Of<TrainingRun> S>
void fields(V& visit, S& x) {
  visit("at", x.at);
  visit("instance_id", x.instance_id);
  visit("model", x.model);
  visit("batch", x.batch);
  visit("image_size", x.image_size);
  visit("device", x.device);
  visit("images_per_s", x.images_per_s);
}

// A GPU's benchmark history, oldest run first.
struct GpuBenchmarkHistory {
  std::string uuid;
  int index = 0;
  std::string type;
  std::optional<double> shortfall_percent;
  std::vector<BenchmarkRun> runs;
  std::vector<TrainingRun> trainings;
};

template <class V, schema::Of<GpuBenchmarkHistory> S>
void fields(V& visit, S& x) {
  visit("uuid", x.uuid);
  visit("index", x.index);
  visit("type", x.type);
  visit("shortfall_percent", x.shortfall_percent);
  visit("runs", x.runs);
  visit("trainings", x.trainings);
}

// POST /v1/training-benchmarks: a finished resnet50-bench instance whose figures to record.
struct TrainingRecordCreate {
  std::string instance_id;
};

template <class V, schema::Of<TrainingRecordCreate> S>
void fields(V& visit, S& x) {
  visit("instance_id", x.instance_id, schema::kRequired);
}

// Its answer: the run recorded, and the GPU it was recorded against.
struct TrainingRecord {
  std::string node_id;
  std::string gpu_uuid;
  int gpu_index = 0;
  std::string gpu_type;
  TrainingRun run;
};

template <class V, schema::Of<TrainingRecord> S>
void fields(V& visit, S& x) {
  visit("node_id", x.node_id);
  visit("gpu_uuid", x.gpu_uuid);
  visit("gpu_index", x.gpu_index);
  visit("gpu_type", x.gpu_type);
  visit("run", x.run);
}

// A GPU of a node: what it is, who holds it, and what it last reported.
struct NodeGpu {
  std::string uuid;
  int index = 0;
  std::string type;
  std::string name;
  int64_t memory_mb = 0;
  int nvlink_domain = -1;
  bool quarantined = false;
  std::optional<std::string> instance_id;  // the first instance holding it
  std::vector<std::string> instance_ids;   // all (several when shared)
  // Its latest samples (server/telemetry_view.h), null before the first: shown, not read.
  Json telemetry;
  std::optional<GpuBenchmark> benchmark;  // null: never measured
};

template <class V, schema::Of<NodeGpu> S>
void fields(V& visit, S& x) {
  visit("uuid", x.uuid);
  visit("index", x.index);
  visit("type", x.type);
  visit("name", x.name);
  visit("memory_mb", x.memory_mb);
  visit("nvlink_domain", x.nvlink_domain);
  visit("quarantined", x.quarantined);
  visit("instance_id", x.instance_id);
  visit("instance_ids", x.instance_ids);
  visit("telemetry", x.telemetry);
  visit("benchmark", x.benchmark);
}

struct Node {
  std::string id;
  std::string name;
  model::NodeState state = model::NodeState::kReady;
  bool cordoned = false;
  std::string status;  // ready, degraded, draining, cordoned, down
  bool schedulable = false;
  int gpu_count = 0;
  int free_gpus = 0;
  std::vector<NodeGpu> gpus;
  std::vector<GpuQuarantine> quarantined_gpus;
  int cpu_count = 0;
  int64_t memory_mb = 0;
  int64_t disk_gb = 0;
  std::string fabric_group;
  std::map<std::string, std::string> labels;
  bool simulated = false;
  std::string isolation;  // "sandbox" or "none"
  std::string isolation_note;
  bool container_runtime = false;  // image work runs here (model::Node::container_runtime)
  std::optional<model::ContainerToolkit> container_toolkit;  // null: not checked
  std::optional<model::VmCapability> vm;                     // null: runs no VMs
  std::string registered_from;
  std::string agent_version;
  Timestamp registered_at{};
  Timestamp last_heartbeat{};
  std::optional<int64_t> clock_skew_ms;
  // The benchmark it was asked for and has not answered; its GPUs take no work meanwhile.
  std::optional<BenchmarkRequest> benchmark_pending;
  // Only in the answers to cordon, uncordon and drain: the instances set moving.
  std::optional<int64_t> moving_instances;
};

template <class V, schema::Of<Node> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("name", x.name);
  visit("state", x.state);
  visit("cordoned", x.cordoned);
  visit("status", x.status);
  visit("schedulable", x.schedulable);
  visit("gpu_count", x.gpu_count);
  visit("free_gpus", x.free_gpus);
  visit("gpus", x.gpus);
  visit("quarantined_gpus", x.quarantined_gpus);
  visit("cpu_count", x.cpu_count);
  visit("memory_mb", x.memory_mb);
  visit("disk_gb", x.disk_gb);
  visit("fabric_group", x.fabric_group);
  visit("labels", x.labels);
  visit("simulated", x.simulated);
  visit("isolation", x.isolation);
  visit("isolation_note", x.isolation_note);
  visit("container_runtime", x.container_runtime);
  visit("container_toolkit", x.container_toolkit);
  visit("vm", x.vm);
  visit("registered_from", x.registered_from);
  visit("agent_version", x.agent_version);
  visit("registered_at", x.registered_at);
  visit("last_heartbeat", x.last_heartbeat);
  visit("clock_skew_ms", x.clock_skew_ms);
  visit("benchmark_pending", x.benchmark_pending);
  visit("moving_instances", x.moving_instances, schema::kOmitEmpty);
}

// A GPU type the platform knows (GET /v1/gpu-types), with its on-demand price and how many
// GPUs of it ready nodes have.
struct GpuType {
  std::string slug;  // the id, as gpu_type names it
  std::string display_name;
  int64_t memory_mb = 0;
  std::optional<Micros> price_per_gpu_hour_micros;  // null: not priced
  std::string currency;
  int total = 0;
  int free = 0;  // not held by an instance
};

template <class V, schema::Of<GpuType> S>
void fields(V& visit, S& x) {
  visit("slug", x.slug);
  visit("display_name", x.display_name);
  visit("memory_mb", x.memory_mb);
  visit("price_per_gpu_hour_micros", x.price_per_gpu_hour_micros);
  visit("currency", x.currency);
  visit("total", x.total);
  visit("free", x.free);
}

// What the GPUs of a type train at: the median over the GPUs whose newest training run has the
// shape (model, batch, image size) of the type's newest.
struct OfferTraining {
  int gpus = 0;
  std::string model;
  int batch = 0;
  int image_size = 0;
  std::map<std::string, double> images_per_s;  // by precision: fp32, amp
  // Mixed-precision images that one currency unit buys, at the on-demand and the spot price; null
  // where there is no price.
  std::optional<double> images_per_price;
  std::optional<double> spot_images_per_price;
};

template <class V, schema::Of<OfferTraining> S>
void fields(V& visit, S& x) {
  visit("gpus", x.gpus);
  visit("model", x.model);
  visit("batch", x.batch);
  visit("image_size", x.image_size);
  visit("images_per_s", x.images_per_s);
  visit("images_per_price", x.images_per_price);
  visit("spot_images_per_price", x.spot_images_per_price);
}

// What the GPUs of a type measure: the median over the newest run of each GPU measured.
struct OfferMeasured {
  int gpus = 0;            // GPUs of the type measured
  bool simulated = false;  // all of them simulated: the catalog's figures, not measured
  Figures figures;
  double spread_percent = 0;  // (max - min) / median of the training figure
  // Training TFLOPS per currency unit an hour of one GPU costs (what one yuan buys in an hour, at
  // the on-demand and the spot price); null where there is no price.
  std::optional<double> perf_per_price;
  std::optional<double> spot_perf_per_price;
  std::optional<OfferTraining> resnet50;  // null: no training run recorded for the type
};

template <class V, schema::Of<OfferMeasured> S>
void fields(V& visit, S& x) {
  visit("gpus", x.gpus);
  visit("simulated", x.simulated);
  visit("figures", x.figures);
  visit("spread_percent", x.spread_percent);
  visit("perf_per_price", x.perf_per_price);
  visit("spot_perf_per_price", x.spot_perf_per_price);
  visit("resnet50", x.resnet50);
}

// What the platform offers of one GPU type (GET /v1/offers).
struct Offer {
  std::string gpu_type;
  std::string display_name;
  int64_t memory_mb = 0;
  int total = 0;
  int free = 0;
  int max_free_per_node = 0;
  std::optional<Micros> price_per_gpu_hour_micros;       // null: not priced
  std::optional<Micros> spot_price_per_gpu_hour_micros;  // null: no spot market for the type
  std::string currency;
  std::optional<OfferMeasured> measured;  // null: no GPU of the type measured yet
};

template <class V, schema::Of<Offer> S>
void fields(V& visit, S& x) {
  visit("gpu_type", x.gpu_type);
  visit("display_name", x.display_name);
  visit("memory_mb", x.memory_mb);
  visit("total", x.total);
  visit("free", x.free);
  visit("max_free_per_node", x.max_free_per_node);
  visit("price_per_gpu_hour_micros", x.price_per_gpu_hour_micros);
  visit("spot_price_per_gpu_hour_micros", x.spot_price_per_gpu_hour_micros);
  visit("currency", x.currency);
  visit("measured", x.measured);
}

// POST /v1/volumes.
struct VolumeCreate {
  std::string name;
  int64_t size_gb = 0;
  std::optional<std::string> node_id;  // operators: where it lives
};

template <class V, schema::Of<VolumeCreate> S>
void fields(V& visit, S& x) {
  visit("name", x.name);
  visit("size_gb", x.size_gb);
  visit("node_id", x.node_id, schema::kOmitEmpty);
}

struct Volume {
  std::string id;
  std::string tenant_id;
  std::string name;
  int size_gb = 0;
  std::optional<std::string> node_id;  // null until placed
  model::VolumeState state = model::VolumeState::kAvailable;
  Timestamp created_at{};
  Micros price_per_gb_month_micros = 0;
};

template <class V, schema::Of<Volume> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("tenant_id", x.tenant_id);
  visit("name", x.name);
  visit("size_gb", x.size_gb);
  visit("node_id", x.node_id);
  visit("state", x.state);
  visit("created_at", x.created_at);
  visit("price_per_gb_month_micros", x.price_per_gb_month_micros);
}

// An entry of the event log (model/event.h).
struct Event {
  int64_t seq = 0;
  Timestamp at{};
  std::optional<std::string> tenant_id;  // null: a platform event
  std::string object_id;
  std::string kind;
  std::string message;
};

template <class V, schema::Of<Event> S>
void fields(V& visit, S& x) {
  visit("seq", x.seq);
  visit("at", x.at);
  visit("tenant_id", x.tenant_id);
  visit("object_id", x.object_id);
  visit("kind", x.kind);
  visit("message", x.message);
}

// GET /v1/audit: an entry of the audit log (model/audit.h says what each member holds).
struct AuditEntry {
  int64_t seq = 0;
  Timestamp at{};
  std::optional<std::string> tenant_id;  // null: no key was recognised
  std::optional<std::string> key_id;
  std::optional<model::Role> role;
  std::string address;
  std::string action;
  std::string target;
  int status = 0;
  std::string outcome;
};

template <class V, schema::Of<AuditEntry> S>
void fields(V& visit, S& x) {
  visit("seq", x.seq);
  visit("at", x.at);
  visit("tenant_id", x.tenant_id);
  visit("key_id", x.key_id);
  visit("role", x.role);
  visit("address", x.address);
  visit("action", x.action);
  visit("target", x.target);
  visit("status", x.status);
  visit("outcome", x.outcome);
}

}  // namespace gpurent::api
