// The controller's side of GPU quarantine (gpu_quarantines.h has the records and what takes a
// GPU out of service): the quarantined GPU leaves the scheduler's mask, the work on it ends at
// this report (its billing too) and is moved like work off a down node (move_off_failure), and
// an operator's release puts it back (measured first, with options().benchmarks). The node is
// `degraded` while any of its GPUs is quarantined.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "controller/controller.h"
#include "controller/internal.h"

namespace gpurent::controller {

void Controller::sync_gpu_availability(const Node& node) {
  ready_gpu_capacity_.reset();
  sched::Cluster& cluster = placements_.cluster();
  const auto handle = cluster.find(node.id);
  if (!handle) return;
  const auto gpus = gpus_by_index(node);
  for (size_t position = 0; position < gpus.size(); ++position) {
    // Fails only when the scheduler kept an older spec of the node (sync_cluster_node logged it).
    const std::string& uuid = gpus[position]->uuid;
    const bool measuring = being_measured(node, uuid);
    if (auto set = cluster.set_gpu_available(*handle, static_cast<int>(position),
                                             !quarantines_.quarantined(uuid) && !measuring);
        !set) {
      spdlog::error("node={} GPU mask: {}", node.id, set.error().message);
    }
  }
  scheduler_.nodes_changed();
}

void Controller::quarantine_failed_gpus(Node& node, const model::TelemetryBatch& batch) {
  auto failing = quarantines_.detect(node, batch);
  if (failing.seen_changed) tracker_.touch_node(node, /*desired_set_changed=*/false);
  for (auto& [uuid, record] : failing.by_uuid) {
    const auto gpu = std::find_if(node.gpus.begin(), node.gpus.end(),
                                  [&](const model::Gpu& g) { return g.uuid == uuid; });
    quarantine_gpu(node, *gpu, std::move(record));
  }
}

void Controller::quarantine_gpu(Node& node, const model::Gpu& gpu, model::GpuQuarantine record) {
  const std::string what =
      fmt::format("GPU {} of node {} was quarantined ({})", gpu.index, node.name, record.message);
  quarantines_.add(node, gpu, std::move(record));
  sync_gpu_availability(node);
  events_.record("", node.id, model::event_kind::kGpuQuarantined,
                 fmt::format("{}: no new work goes there until an operator releases it", what));
  spdlog::warn("gpu_quarantined node={} gpu={} index={}", node.id, gpu.uuid, gpu.index);
  // Billing of the work on it ends at this report, which carried the fault; the downtime runs
  // until it runs again.
  PlacedInstances holders;
  for (const auto& id : placements_.holders(gpu.uuid)) {
    Instance& instance = instances_.at(id);
    holders.emplace(instance.id, &instance);
    if (instance.state == model::InstanceState::kRunning) {
      downtime_.start(instance, now(), "gpu_quarantined");
    }
  }
  move_off_failure({node, gpu.uuid, what}, holders);
}

Result<model::GpuQuarantine> Controller::release_gpu(const Principal& caller,
                                                     std::string_view node_id, int gpu_index) {
  if (!caller.is_operator()) return fail(forbidden("release GPUs"));
  const auto node_it = nodes_.find(node_id);
  if (node_it == nodes_.end()) return fail(Error::not_found("node", node_id));
  Node& node = node_it->second;
  const auto gpu = std::find_if(node.gpus.begin(), node.gpus.end(),
                                [&](const model::Gpu& g) { return g.index == gpu_index; });
  if (gpu == node.gpus.end()) {
    return fail(Error::not_found("gpu", fmt::format("{} of node {}", gpu_index, node.id)));
  }
  GPURENT_TRY(record, quarantines_.release(caller, node, *gpu));
  sync_gpu_availability(node);
  events_.record("", node.id, model::event_kind::kGpuReleased,
                 fmt::format("GPU {} of node {} is back in service (released by {})", gpu_index,
                             node.name, caller.key_id));
  spdlog::info("gpu_released node={} gpu={} index={}", node.id, gpu->uuid, gpu_index);
  // Checked before it takes work again: a slow GPU released without a fix is found again.
  if (options_.benchmarks.on_join_and_release && node.answers_benchmarks &&
      node.state == NodeState::kReady) {
    ask_benchmark(node, {gpu->uuid}, model::BenchmarkReason::kReleased);
  }
  schedule();
  return record;
}

}  // namespace gpurent::controller
