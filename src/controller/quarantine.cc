// Controller members for GPU quarantine (model/gpu_quarantine.h).
//
// A report whose telemetry shows a GPU failing (a fatal XID event, or its double-bit ECC count
// above the previous sample's) quarantines that GPU as the report is applied: the record is
// committed with the report, the scheduler's mask keeps new work off the GPU, and the work on it
// ends at this report (its billing too) and is moved like work off a down node
// (move_off_failure). The node is `degraded` while any of its GPUs is quarantined. An operator
// releases the GPU once it has been reset and checked.
//
// The ECC rise is measured against the count last seen, which the node's row keeps
// (Node::ecc_dbe_seen): a rise while the server was down is seen at the first report after the
// restart. The count is NVML's volatile one, which a driver reload resets: a lower count is a new
// baseline, and an error between a reload and the next report the server sees is caught by the
// XID 48 that the driver raises with it.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "controller/controller.h"
#include "controller/internal.h"

namespace gpurent::controller {

void Controller::restore_quarantines(std::vector<model::GpuQuarantine>& records) {
  for (auto& record : records) quarantines_.insert_or_assign(record.id, std::move(record));
}

bool Controller::quarantined(std::string_view gpu_uuid) const {
  const auto it = quarantines_.find(gpu_uuid);
  return it != quarantines_.end() && it->second.active();
}

bool Controller::on_quarantined_gpu(const model::Instance& instance) const {
  return std::any_of(instance.gpus.begin(), instance.gpus.end(),
                     [&](const std::string& uuid) { return quarantined(uuid); });
}

void Controller::sync_gpu_availability(const Node& node) {
  const auto handle = cluster_.find(node.id);
  if (!handle) return;
  const auto gpus = gpus_by_index(node);
  for (size_t position = 0; position < gpus.size(); ++position) {
    // Fails only when the scheduler kept an older spec of the node (sync_cluster_node logged it).
    if (auto set = cluster_.set_gpu_available(*handle, static_cast<int>(position),
                                              !quarantined(gpus[position]->uuid));
        !set) {
      spdlog::error("node={} GPU mask: {}", node.id, set.error().message);
    }
  }
  queue_changed_ = true;
}

void Controller::quarantine_failed_gpus(Node& node, const model::TelemetryBatch& batch) {
  if (batch.empty()) return;
  std::map<std::string, model::GpuQuarantine> found;  // by UUID: the first fault seen wins
  const auto gpu_of = [&](const std::string& uuid) -> const model::Gpu* {
    const auto it = std::find_if(node.gpus.begin(), node.gpus.end(),
                                 [&](const model::Gpu& gpu) { return gpu.uuid == uuid; });
    return it == node.gpus.end() ? nullptr : &*it;
  };
  for (const auto& xid : batch.xids) {
    if (!model::is_fatal_xid(xid.code) || !gpu_of(xid.uuid)) continue;
    found.emplace(xid.uuid, model::GpuQuarantine{.cause = "xid",
                                                 .xid = xid.code,
                                                 .message = fmt::format("fatal XID {}", xid.code)});
  }
  // The double-bit count of each GPU as last seen, updated through the batch in sample order.
  bool seen_changed = false;
  for (const auto& sample : batch.samples) {
    if (!sample.ecc_dbe_total) continue;
    // Only the node's own GPUs get a count, so a GPU already counted needs no search of the
    // node's GPUs (per sample of every report); a count left by a GPU the node no longer has
    // quarantines nothing (below).
    auto seen = node.ecc_dbe_seen.find(sample.uuid);
    if (seen == node.ecc_dbe_seen.end()) {
      if (!gpu_of(sample.uuid)) continue;
      // The baseline: a GPU of this node that never reported a count.
      node.ecc_dbe_seen.emplace(sample.uuid, *sample.ecc_dbe_total);
      seen_changed = true;
      continue;
    }
    if (*sample.ecc_dbe_total == seen->second) continue;
    seen_changed = true;
    if (*sample.ecc_dbe_total > seen->second) {
      found.emplace(
          sample.uuid,
          model::GpuQuarantine{.cause = "ecc_dbe",
                               .message = fmt::format("double-bit ECC errors rose from {} to {}",
                                                      seen->second, *sample.ecc_dbe_total)});
    }
    // A lower count: the driver reloaded and the volatile count started again.
    seen->second = *sample.ecc_dbe_total;
  }
  if (seen_changed) tracker_.touch_node(node, /*desired_set_changed=*/false);
  for (auto& [uuid, record] : found) {
    const model::Gpu* gpu = gpu_of(uuid);
    if (gpu && !quarantined(uuid)) quarantine_gpu(node, *gpu, std::move(record));
  }
}

void Controller::quarantine_gpu(Node& node, const model::Gpu& gpu, model::GpuQuarantine record) {
  record.id = gpu.uuid;
  record.node_id = node.id;
  record.gpu_index = gpu.index;
  record.at = now();
  const std::string what =
      fmt::format("GPU {} of node {} was quarantined ({})", gpu.index, node.name, record.message);
  changes_.gpu_quarantines.push_back(record);
  quarantines_.insert_or_assign(gpu.uuid, std::move(record));
  sync_gpu_availability(node);
  events_.record("", node.id, model::event_kind::kGpuQuarantined,
                 fmt::format("{}: no new work goes there until an operator releases it", what));
  spdlog::warn("gpu_quarantined node={} gpu={} index={}", node.id, gpu.uuid, gpu.index);
  // Billing of the work on it ends at this report, which carried the fault; the downtime runs
  // until it runs again.
  PlacedInstances holders;
  for (const auto& id : gpu_holders(gpu.uuid)) {
    Instance& instance = instances_.at(id);
    holders.emplace(instance.id, &instance);
    if (instance.state == model::InstanceState::kRunning) {
      downtime_.start(instance, now(), "gpu_quarantined");
    }
  }
  move_off_failure({node, gpu.uuid, what}, holders);
}

std::vector<const model::GpuQuarantine*> Controller::quarantined_gpus(
    std::string_view node_id) const {
  std::vector<const model::GpuQuarantine*> out;
  const auto node = nodes_.find(node_id);
  if (node == nodes_.end()) return out;
  for (const auto* gpu : gpus_by_index(node->second)) {
    const auto it = quarantines_.find(gpu->uuid);
    if (it != quarantines_.end() && it->second.active()) out.push_back(&it->second);
  }
  return out;
}

Result<model::GpuQuarantine> Controller::release_gpu(const Principal& caller,
                                                     std::string_view node_id, int gpu_index) {
  if (!caller.is_operator()) return fail(forbidden("release GPUs"));
  const auto node_it = nodes_.find(node_id);
  if (node_it == nodes_.end()) return fail(Error::not_found("node", node_id));
  const Node& node = node_it->second;
  const auto gpu = std::find_if(node.gpus.begin(), node.gpus.end(),
                                [&](const model::Gpu& g) { return g.index == gpu_index; });
  if (gpu == node.gpus.end()) {
    return fail(Error::not_found("gpu", fmt::format("{} of node {}", gpu_index, node.id)));
  }
  if (!quarantined(gpu->uuid)) {
    return fail(
        Error::conflict("gpu_not_quarantined",
                        fmt::format("GPU {} of node {} is not quarantined", gpu_index, node.id)));
  }
  model::GpuQuarantine& record = quarantines_.at(gpu->uuid);
  record.released_at = now();
  record.released_by = caller.key_id;
  changes_.gpu_quarantines.push_back(record);
  sync_gpu_availability(node);
  events_.record("", node.id, model::event_kind::kGpuReleased,
                 fmt::format("GPU {} of node {} is back in service (released by {})", gpu_index,
                             node.name, caller.key_id));
  spdlog::info("gpu_released node={} gpu={} index={}", node.id, gpu->uuid, gpu_index);
  schedule();
  return record;
}

}  // namespace gpurent::controller
