// Fleet: the fleet as people and the alert rules see it. What is on offer (free GPUs by type, at
// their price), each node's status, GPU metrics for tenants and operators, the latest reading of
// every GPU and the platform's statistics for /metrics, what the alert rules observe, and the two
// ways into the GPU series from outside a report (samples pushed on their own, tenants' idle
// rules).
//
// Invariants: a tenant sees the metrics of the GPUs its own instances hold and of its own
// instances only (anything else is not found); quarantined GPUs and GPUs of nodes that are not
// ready or are cordoned are never on offer; a GPU is observed by the alert rules only once it has
// reported, and not while its node is down (the node's heartbeat alert says it).
//
// Part of the Controller (controller.h). Reads the components it names in its Context, and the
// instances; changes only the GPU series and the monitor's rules.
#pragma once

#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/indexed_map.h"
#include "common/result.h"
#include "controller/commands.h"
#include "controller/fleet_monitor.h"
#include "controller/gpu_quarantines.h"
#include "controller/monitoring.h"
#include "controller/node_registry.h"
#include "controller/placements.h"
#include "controller/pricing.h"
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
    const Pricing& pricing;
    FleetMonitor& monitor;
    const IndexedMap<model::Instance>& instances;
    Millis heartbeat_timeout;
    // Pending instances, for the statistics.
    std::function<size_t()> queue_length;
  };
  explicit Fleet(Context context) : c_(std::move(context)) {}
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Per GPU type on ready, uncordoned nodes: GPUs in service, those free, the most free on one
  // node, and the on-demand price now.
  std::vector<Offer> offers() const;
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
  // heartbeats, clock skews, instances' utilisation. The strings are the fleet's (valid until the
  // controller changes).
  void observe(std::vector<monitor::ObservationRef>& out,
               const std::vector<monitor::Metric>& watched) const;

 private:
  Timestamp now() const { return c_.clock.now(); }

  Context c_;
};

}  // namespace gpurent::controller
