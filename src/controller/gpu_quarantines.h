// GPU quarantine (model/gpu_quarantine.h): which GPUs are out of service, why, and who released
// them; and what in a report's telemetry takes a GPU out of service.
//
// A report whose telemetry shows a GPU failing (a fatal XID event, or its double-bit ECC count
// above the count last seen) quarantines that GPU as the report is applied. The ECC rise is
// measured against Node::ecc_dbe_seen, which the node's row keeps, so a rise while the server was
// down is seen at the first report after the restart. The count is NVML's volatile one, which a
// driver reload resets: a lower count is a new baseline, and an error between a reload and the
// next report the server sees is caught by the XID 48 that the driver raises with it.
//
// Invariants: a GPU has at most one record (its latest quarantine), keyed by its UUID; a record
// is active until released, and only an active record can be released; every record added or
// released is in the pending ChangeSet, durable with the report or command that made it.
//
// Part of the Controller (controller.h), which keeps new work off a quarantined GPU (the
// scheduler's mask) and moves the work that was on it.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "controller/change_set.h"
#include "controller/node_registry.h"
#include "model/gpu_quarantine.h"
#include "model/instance.h"
#include "model/node.h"
#include "model/telemetry.h"
#include "model/tenant.h"

namespace gpurent::controller {

class GpuQuarantines {
 public:
  struct Context {
    const Clock& clock;
    ChangeSet& changes;
    const NodeRegistry& nodes;
  };
  explicit GpuQuarantines(Context context) : c_(context) {}
  GpuQuarantines(const GpuQuarantines&) = delete;
  GpuQuarantines& operator=(const GpuQuarantines&) = delete;

  // The records from the store's snapshot.
  void restore(Snapshot& snapshot);

  bool quarantined(std::string_view gpu_uuid) const;
  // Whether any GPU the instance holds is quarantined.
  bool holds_quarantined(const model::Instance& instance) const;
  // The node's quarantined GPUs, by index; none for an unknown node.
  std::vector<const model::GpuQuarantine*> on_node(std::string_view node_id) const;

  // What the report's telemetry shows failing among the node's GPUs not yet quarantined, by UUID
  // (the first fault seen of each); moves node.ecc_dbe_seen to the counts seen. `seen_changed`:
  // the node's row must be written.
  struct Failing {
    std::map<std::string, model::GpuQuarantine> by_uuid;
    bool seen_changed = false;
  };
  Failing detect(model::Node& node, const model::TelemetryBatch& batch) const;
  // Records the GPU quarantined now, for `record`'s cause.
  void add(const model::Node& node, const model::Gpu& gpu, model::GpuQuarantine record);
  // Records it released by the caller (an operator; checked by the controller): 409
  // gpu_not_quarantined when it is not.
  Result<model::GpuQuarantine> release(const model::Principal& caller, const model::Node& node,
                                       const model::Gpu& gpu);

 private:
  Context c_;
  std::map<std::string, model::GpuQuarantine, std::less<>> records_;  // by GPU UUID
};

}  // namespace gpurent::controller
