#include "controller/gpu_quarantines.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "controller/internal.h"

namespace gpurent::controller {

void GpuQuarantines::restore(Snapshot& snapshot) {
  for (auto& record : snapshot.gpu_quarantines) {
    records_.insert_or_assign(record.id, std::move(record));
  }
}

bool GpuQuarantines::quarantined(std::string_view gpu_uuid) const {
  const auto it = records_.find(gpu_uuid);
  return it != records_.end() && it->second.active();
}

bool GpuQuarantines::holds_quarantined(const model::Instance& instance) const {
  return std::any_of(instance.gpus.begin(), instance.gpus.end(),
                     [&](const std::string& uuid) { return quarantined(uuid); });
}

std::vector<const model::GpuQuarantine*> GpuQuarantines::on_node(std::string_view node_id) const {
  std::vector<const model::GpuQuarantine*> out;
  const auto node = c_.nodes.find(node_id);
  if (node == c_.nodes.end()) return out;
  for (const auto* gpu : gpus_by_index(node->second)) {
    const auto it = records_.find(gpu->uuid);
    if (it != records_.end() && it->second.active()) out.push_back(&it->second);
  }
  return out;
}

GpuQuarantines::Failing GpuQuarantines::detect(model::Node& node,
                                               const model::TelemetryBatch& batch) const {
  Failing failing;
  if (batch.empty()) return failing;
  const auto on_node = [&](const std::string& uuid) {
    return std::any_of(node.gpus.begin(), node.gpus.end(),
                       [&](const model::Gpu& gpu) { return gpu.uuid == uuid; });
  };
  for (const auto& xid : batch.xids) {
    if (!model::is_fatal_xid(xid.code) || !on_node(xid.uuid)) continue;
    failing.by_uuid.emplace(
        xid.uuid,
        model::GpuQuarantine{
            .cause = "xid", .xid = xid.code, .message = fmt::format("fatal XID {}", xid.code)});
  }
  // The double-bit count of each GPU as last seen, updated through the batch in sample order.
  for (const auto& sample : batch.samples) {
    if (!sample.ecc_dbe_total) continue;
    // Only the node's own GPUs get a count, so a GPU already counted needs no search of the
    // node's GPUs (per sample of every report); a count left by a GPU the node no longer has
    // quarantines nothing (below).
    auto seen = node.ecc_dbe_seen.find(sample.uuid);
    if (seen == node.ecc_dbe_seen.end()) {
      if (!on_node(sample.uuid)) continue;
      // The baseline: a GPU of this node that never reported a count.
      node.ecc_dbe_seen.emplace(sample.uuid, *sample.ecc_dbe_total);
      failing.seen_changed = true;
      continue;
    }
    if (*sample.ecc_dbe_total == seen->second) continue;
    failing.seen_changed = true;
    if (*sample.ecc_dbe_total > seen->second) {
      failing.by_uuid.emplace(
          sample.uuid,
          model::GpuQuarantine{.cause = "ecc_dbe",
                               .message = fmt::format("double-bit ECC errors rose from {} to {}",
                                                      seen->second, *sample.ecc_dbe_total)});
    }
    // A lower count: the driver reloaded and the volatile count started again.
    seen->second = *sample.ecc_dbe_total;
  }
  std::erase_if(failing.by_uuid, [&](const auto& entry) {
    return quarantined(entry.first) || !on_node(entry.first);
  });
  return failing;
}

void GpuQuarantines::add(const model::Node& node, const model::Gpu& gpu,
                         model::GpuQuarantine record) {
  record.id = gpu.uuid;
  record.node_id = node.id;
  record.gpu_index = gpu.index;
  record.at = c_.clock.now();
  c_.changes.gpu_quarantines.push_back(record);
  records_.insert_or_assign(gpu.uuid, std::move(record));
}

Result<model::GpuQuarantine> GpuQuarantines::release(const Principal& caller,
                                                     const model::Node& node,
                                                     const model::Gpu& gpu) {
  if (!quarantined(gpu.uuid)) {
    return fail(
        Error::conflict("gpu_not_quarantined",
                        fmt::format("GPU {} of node {} is not quarantined", gpu.index, node.id)));
  }
  model::GpuQuarantine& record = records_.at(gpu.uuid);
  record.released_at = c_.clock.now();
  record.released_by = caller.key_id;
  c_.changes.gpu_quarantines.push_back(record);
  return record;
}

}  // namespace gpurent::controller
