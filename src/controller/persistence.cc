// The controller's persistence: restoring from a snapshot, and handing the store the changes its
// ChangeTracker gathered (whole, or streamed in pieces during a long command); controller.h and
// change_tracker.h have the contracts.
#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "controller/controller.h"
#include "controller/internal.h"

namespace gpurent::controller {

// --- Persistence ------------------------------------------------------------------------------

Status Controller::restore(Snapshot snapshot) {
  const Timestamp start = now();
  GPURENT_CHECK(monitor_.restore(snapshot.monitoring));
  GPURENT_CHECK(accounts_.restore(snapshot));
  // Before the nodes: syncing a node into the scheduler applies its quarantined GPUs.
  quarantines_.restore(snapshot);
  benchmarks_.restore(snapshot);
  for (auto& node : snapshot.nodes) {
    benchmark_asked_ = benchmark_asked_ || node.benchmark.has_value();
    // Heartbeats are not persisted; every node gets a full timeout to report after a restart.
    node.last_heartbeat = start;
    // An agent may have seen generations that were served but never committed before a crash.
    // Jumping past them keeps "generation G" meaning one desired set, so the agent converges to
    // the restored state and its applied generation never vouches for a set it did not see.
    node.generation += kGenerationJumpOnRestore;
    for (const auto& gpu : node.gpus) monitor_.series().set_owner(gpu.uuid, node.id);
    auto& restored = nodes_.add(std::move(node));
    tracker_.touch_node(restored, /*desired_set_changed=*/false);
    sync_cluster_node(restored);
  }
  // Before the instances: a run's start is read from its usage record (restore_run_start).
  metering_.restore(snapshot);
  std::sort(snapshot.instances.begin(), snapshot.instances.end(),
            [](const Instance& a, const Instance& b) {
              return std::tie(a.created_at, a.id) < std::tie(b.created_at, b.id);
            });
  for (auto& instance : snapshot.instances) {
    auto& restored = instances_.restore(std::move(instance));
    restore_run_start(restored);
    scheduler_.restore(restored);
    if (model::holds_gpus(restored.state)) {
      GPURENT_TRY(assignment, assignment_of(restored));
      GPURENT_CHECK(placements_.restore(restored, std::move(assignment)));
      if (restored.state == InstanceState::kRunning && restored.spec.max_runtime_s &&
          restored.started_at) {
        deadlines_.emplace(*restored.started_at + Millis(*restored.spec.max_runtime_s * 1000),
                           restored.id);
      }
    }
  }
  for (auto& job : snapshot.jobs) restore_started_tasks(job);
  jobs_.restore(std::move(snapshot.jobs));
  reservations_.restore(snapshot);
  templates_.restore(std::move(snapshot.templates));
  GPURENT_CHECK(pricing_.restore(snapshot));
  metering_.reindex(instances_.all());
  volumes_.restore(snapshot);
  idempotency_.restore(std::move(snapshot.idempotency));
  downtime_.restore(snapshot);
  GPURENT_CHECK(audit_.restore(std::move(snapshot.audit)));
  return events_.restore(std::move(snapshot.events));
}

ChangeSet Controller::take_changes(Form form) {
  return form == Form::kStoreRows ? tracker_.take_changes_for_store() : tracker_.take_changes();
}

void Controller::stream_placed_rows(std::function<void(ChangeSet)> sink, size_t every) {
  tracker_.stream_placed_rows(std::move(sink), every);
}

}  // namespace gpurent::controller
