#include "controller/node_registry.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace gpurent::controller {

const std::vector<model::Node*>& NodeRegistry::in_order() {
  if (order_.size() != nodes_.size()) {
    order_.clear();
    for (auto& [id, node] : nodes_) order_.push_back(&node);
  }
  return order_;
}

model::Node& NodeRegistry::add(model::Node node) {
  by_credential_.emplace(node.credential_hash, node.id);
  for (const auto& gpu : node.gpus) by_gpu_.emplace(gpu.uuid, node.id);
  std::string id = node.id;
  return nodes_.emplace(std::move(id), std::move(node)).first->second;
}

void NodeRegistry::re_register(model::Node& node, std::string credential_hash) {
  by_credential_.erase(node.credential_hash);
  node.credential_hash = std::move(credential_hash);
  by_credential_.emplace(node.credential_hash, node.id);
  telemetry_.erase(node.id);
}

std::optional<std::string> NodeRegistry::authenticate(std::string_view credential_hash) const {
  const auto it = by_credential_.find(std::string(credential_hash));
  if (it == by_credential_.end()) return std::nullopt;
  return it->second;
}

std::string_view NodeRegistry::registered_from(std::string_view node_id) const {
  const auto node = nodes_.find(node_id);
  return node == nodes_.end() ? std::string_view() : std::string_view(node->second.registered_from);
}

std::string_view NodeRegistry::owner_of_gpu(std::string_view uuid) const {
  const auto it = by_gpu_.find(uuid);
  return it == by_gpu_.end() ? std::string_view() : std::string_view(it->second);
}

NodePage NodeRegistry::list(const model::Principal& caller, std::string_view cursor,
                            size_t limit) const {
  NodePage page;
  if (!caller.is_operator()) return page;
  // By position in id order, not by the cursor's presence: a node removed between two pages
  // does not break the walk.
  for (auto it = cursor.empty() ? nodes_.begin() : nodes_.upper_bound(cursor); it != nodes_.end();
       ++it) {
    if (page.items.size() == limit) {
      page.next_cursor = page.items.back()->id;
      break;
    }
    page.items.push_back(&it->second);
  }
  return page;
}

Result<const model::Node*> NodeRegistry::get(const model::Principal& caller,
                                             std::string_view id) const {
  const auto it = nodes_.find(id);
  if (!caller.is_operator() || it == nodes_.end()) return fail(Error::not_found("node", id));
  return &it->second;
}

void NodeRegistry::record_telemetry(const model::Node& node, const model::TelemetryBatch& batch) {
  std::vector<GpuTelemetry>* kept_of_node = nullptr;  // looked up with the first GPU of the node
  const auto kept_for = [&](const std::string& uuid) -> GpuTelemetry* {
    const auto gpu = std::find_if(node.gpus.begin(), node.gpus.end(),
                                  [&](const model::Gpu& g) { return g.uuid == uuid; });
    if (gpu == node.gpus.end()) return nullptr;  // not this node's GPU
    if (!kept_of_node) {
      kept_of_node = &telemetry_[node.id];
      kept_of_node->resize(node.gpus.size());
    }
    return &(*kept_of_node)[static_cast<size_t>(gpu - node.gpus.begin())];
  };
  for_each_gpu_run(batch.samples, [&](size_t begin, size_t end) {
    const model::GpuSample* newest = &batch.samples[begin];
    for (size_t i = begin + 1; i < end; ++i) {
      if (batch.samples[i].time_ms >= newest->time_ms) newest = &batch.samples[i];
    }
    GpuTelemetry* kept = kept_for(newest->uuid);
    if (!kept) return;
    if (!kept->latest || kept->latest->time_ms <= newest->time_ms) kept->latest = *newest;
  });
  for (const auto& xid : batch.xids) {
    GpuTelemetry* kept = kept_for(xid.uuid);
    if (!kept) continue;
    ++kept->xid_count;
    if (!kept->last_xid || kept->last_xid->time_ms <= xid.time_ms) kept->last_xid = xid;
    spdlog::warn("gpu_xid node={} gpu={} xid={}", node.id, xid.uuid, xid.code);
  }
}

const GpuTelemetry* NodeRegistry::gpu_telemetry(std::string_view uuid) const {
  const auto owner = by_gpu_.find(std::string(uuid));
  if (owner == by_gpu_.end()) return nullptr;
  const auto kept = telemetry_.find(owner->second);
  if (kept == telemetry_.end()) return nullptr;
  const model::Node& node = nodes_.at(owner->second);
  for (size_t i = 0; i < node.gpus.size() && i < kept->second.size(); ++i) {
    if (node.gpus[i].uuid != uuid) continue;
    const GpuTelemetry& telemetry = kept->second[i];
    return telemetry.latest || telemetry.last_xid ? &telemetry : nullptr;
  }
  return nullptr;
}

void NodeRegistry::record_clock_skew(std::string_view node_id, int64_t skew_ms) {
  const auto [it, fresh] = clock_skew_ms_.try_emplace(std::string(node_id), skew_ms);
  if (!fresh) it->second = skew_ms;
}

std::optional<int64_t> NodeRegistry::clock_skew_ms(std::string_view node_id) const {
  const auto it = clock_skew_ms_.find(node_id);
  if (it == clock_skew_ms_.end()) return std::nullopt;
  return it->second;
}

}  // namespace gpurent::controller
