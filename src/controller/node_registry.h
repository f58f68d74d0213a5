// The nodes of the fleet as the controller knows them: each node (model::Node) by id, found by its
// credential and by its GPUs' UUIDs, plus what the nodes' reports say that is kept in memory only
// (each GPU's latest telemetry, each agent's clock skew).
//
// Invariants: a credential hash and a GPU UUID each belong to at most one node; nodes are never
// removed, so pointers and references to them stay valid. The scheduler's view of the nodes
// (sched::Cluster) and everything placed on them are the controller's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/indexed_map.h"
#include "common/result.h"
#include "common/string_hash.h"
#include "controller/commands.h"
#include "controller/gpu_telemetry.h"
#include "model/node.h"
#include "model/telemetry.h"
#include "model/tenant.h"

namespace gpurent::controller {

class NodeRegistry {
 public:
  using Map = IndexedMap<model::Node>;

  // --- The nodes, by id; walks are in id order ----------------------------------------------
  Map::iterator find(std::string_view id) { return nodes_.find(id); }
  Map::const_iterator find(std::string_view id) const { return nodes_.find(id); }
  Map::iterator begin() { return nodes_.begin(); }
  Map::iterator end() { return nodes_.end(); }
  Map::const_iterator begin() const { return nodes_.begin(); }
  Map::const_iterator end() const { return nodes_.end(); }
  model::Node& at(std::string_view id) { return nodes_.find(id)->second; }
  const model::Node& at(std::string_view id) const { return nodes_.find(id)->second; }
  bool contains(std::string_view id) const { return nodes_.contains(id); }
  size_t size() const { return nodes_.size(); }
  // Every node, in id order, as a vector: the tick walks all nodes twice, and a vector is walked
  // without waiting on each tree node in turn. Rebuilt when a node was added.
  const std::vector<model::Node*>& in_order();

  // Adds a node (registered, or restored), indexing its credential and GPUs.
  model::Node& add(model::Node node);
  // A known node registering again: the new credential replaces the old one (which stops
  // working), and its GPUs' kept telemetry is dropped (they may come in another order).
  void re_register(model::Node& node, std::string credential_hash);

  // --- Who is calling ---------------------------------------------------------------------------
  // The node id for a node credential hash.
  std::optional<std::string> authenticate(std::string_view credential_hash) const;
  // The address a known node registered from (Node::registered_from); "" for an unknown node.
  std::string_view registered_from(std::string_view node_id) const;
  // The node a GPU belongs to; "" for a GPU no node has.
  std::string_view owner_of_gpu(std::string_view uuid) const;

  // --- Operators' reads (tenants see no nodes)
  // ---------------------------------------------------- Up to `limit` nodes after `cursor` (a node
  // id; empty: from the first) in id order.
  NodePage list(const model::Principal& caller, std::string_view cursor, size_t limit) const;
  Result<const model::Node*> get(const model::Principal& caller, std::string_view id) const;

  // --- What reports say, in memory only -------------------------------------------------------
  // Keeps each of the node's GPUs' newest sample and XID from the report.
  void record_telemetry(const model::Node& node, const model::TelemetryBatch& batch);
  // What the GPU last reported; nullptr before its first sample.
  const GpuTelemetry* gpu_telemetry(std::string_view uuid) const;
  // The agent's clock minus the server's, in ms, at its latest report that said when it was sent
  // (clock_skew.cc says how it is measured).
  void record_clock_skew(std::string_view node_id, int64_t skew_ms);
  std::optional<int64_t> clock_skew_ms(std::string_view node_id) const;
  const std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>>& clock_skews() const {
    return clock_skew_ms_;
  }

 private:
  Map nodes_;
  std::unordered_map<std::string, std::string> by_credential_;
  std::unordered_map<std::string, std::string, StringHash, std::equal_to<>> by_gpu_;
  std::vector<model::Node*> order_;  // in_order()
  // By node id, its GPUs' in the order of node.gpus: a report looks its node up once, where a
  // table of every GPU took a lookup per GPU. Dropped when the node registers again; the next
  // report fills it.
  std::unordered_map<std::string, std::vector<GpuTelemetry>, StringHash, std::equal_to<>>
      telemetry_;
  // By node id; hashed: every report of every node writes its entry.
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> clock_skew_ms_;
};

}  // namespace gpurent::controller
