// Fleet: the fleet as people, agents and the alert rules see it. The nodes, what is placed on
// them and their quarantined GPUs; each node's desired set (what its agent should run); what is
// on offer (free GPUs by type, at their price), each node's status, GPU metrics for tenants and
// operators, the latest reading of every GPU and the platform's statistics for /metrics, what the
// alert rules observe, and the two ways into the GPU series from outside a report (samples pushed
// on their own, tenants' idle rules). It also keeps when nodes' silence starts to count.
//
// Invariants: a tenant sees the metrics of the GPUs its own instances hold and of its own
// instances only (anything else is not found); quarantined GPUs and GPUs of nodes that are not
// ready or are cordoned are never on offer; a GPU is observed by the alert rules only once it has
// reported, and not while its node is down (the node's heartbeat alert says it).
//
// Part of the Controller (controller.h). Reads the components it names in its Context, and the
// instances; changes only the GPU series, the monitor's rules and the start of silence.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/indexed_map.h"
#include "common/result.h"
#include "controller/commands.h"
#include "controller/fleet_monitor.h"
#include "controller/gpu_benchmarks.h"
#include "controller/gpu_quarantines.h"
#include "controller/job_registry.h"
#include "controller/monitoring.h"
#include "controller/node_registry.h"
#include "controller/placements.h"
#include "controller/pricing.h"
#include "controller/scheduler.h"
#include "controller/volumes.h"
#include "model/agent_protocol.h"
#include "model/instance.h"
#include "model/node.h"
#include "model/tenant.h"
#include "monitor/alerts.h"
#include "monitor/prometheus.h"

namespace gpurent::controller {

class Fleet {
 public:
  struct Context {
    const Clock& clock;
    const NodeRegistry& nodes;
    const Placements& placements;
    const GpuQuarantines& quarantines;
    const GpuBenchmarks& benchmarks;
    const Pricing& pricing;
    FleetMonitor& monitor;
    const IndexedMap<model::Instance>& instances;
    const JobRegistry& jobs;
    const Volumes& volumes;
    const Scheduler& scheduler;  // the queue, for the statistics
    Millis heartbeat_timeout;
    // The instances whose files live on a node (InstanceRegistry::with_files_on).
    std::function<std::vector<std::string>(std::string_view node_id)> with_files_on;
  };
  explicit Fleet(Context context) : c_(std::move(context)) {}
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Per GPU type on ready, uncordoned nodes: GPUs in service, those free (held by no instance and
  // not being measured), the most free on one node, and the on-demand price now.
  std::vector<Offer> offers() const;
  // The nodes: found by id, credential or GPU; operators' listings; what reports say of GPUs and
  // clocks (node_registry.h).
  const NodeRegistry& nodes() const { return c_.nodes; }
  // What each placed instance holds, and the scheduler's view of the cluster (placements.h).
  const Placements& placements() const { return c_.placements; }
  // The quarantine records, and each node's quarantined GPUs (gpu_quarantines.h).
  const GpuQuarantines& quarantines() const { return c_.quarantines; }
  // Each GPU's benchmark figures and history, each type's median (gpu_benchmarks.h).
  const GpuBenchmarks& benchmarks() const { return c_.benchmarks; }
  // The GPU series, alert rules, alerts and their history (fleet_monitor.h).
  FleetMonitor& monitor() { return c_.monitor; }
  const FleetMonitor& monitor() const { return c_.monitor; }

  // --- Agents ---
  // What the node's agent should run: the instances placed on it, with their volumes, the
  // instances whose files it keeps, and the benchmark it is asked for.
  Result<model::DesiredState> desired_state(std::string_view node_id) const;
  // The generation of the node's desired set, without building the set (a long-poll checks it on
  // every wake-up, and builds the set only to answer).
  Result<int64_t> desired_generation(std::string_view node_id) const;
  // The host was not listening until now (its thread was stalled): reports may have waited
  // unread, so no node is marked down for silence before now + heartbeat_timeout. Billing still
  // ends at a node's last report if it does go down.
  void forgive_silence_until_now() { silence_counted_from_ = now(); }
  // A node's silence counts from its last heartbeat, or from here if that is later.
  Timestamp silence_counted_from() const { return silence_counted_from_; }
  // How the node is, for operators: "down" (silent past the heartbeat timeout), "draining"
  // (cordoned, and work it was asked to move has not left yet), "cordoned", "degraded" (a GPU of
  // it is quarantined), or "ready".
  std::string_view node_status(const model::Node& node) const;
  // Whether an instance placed on the node unpacks this upload (InstanceSpec::workdir): the node
  // may then fetch it.
  bool node_uses_workdir(std::string_view node_id, std::string_view upload_id) const;

  // --- Monitoring ---
  // A node's GPU samples (from its report). kNotFound when the node is unknown; samples of GPUs
  // that are not the node's, or out of order, are skipped and counted.
  Status ingest_gpu_samples(std::string_view node_id, std::span<const GpuSamples> gpus);
  // Tenants: only the GPUs of their own instances (404 otherwise); operators: any.
  Result<MetricsAnswer> query_metrics(const model::Principal& caller,
                                      const MetricsQuery& query) const;
  // A tenant's idle rule for its instance (monitor::idle_rule): notify, and stop it if auto_stop.
  Result<monitor::Rule> set_idle_alert(const model::Principal& caller, std::string_view instance_id,
                                       double below_percent, int64_t for_ms, bool auto_stop);
  // The latest sample of every GPU that reported within kSampleMaxAgeMs, for /metrics.
  std::vector<monitor::GpuReading> gpu_readings() const;
  PlatformStats platform_stats() const;
  // What the alert rules watch of the fleet, now, into `out` (empty): `watched` GPU metrics,
  // heartbeats, clock skews, instances' utilisation, GPUs' benchmark shortfalls. The strings are
  // the fleet's (valid until the controller changes).
  void observe(std::vector<monitor::ObservationRef>& out,
               const std::vector<monitor::Metric>& watched) const;

 private:
  Timestamp now() const { return c_.clock.now(); }

  Context c_;
  Timestamp silence_counted_from_{};
};

}  // namespace gpurent::controller
