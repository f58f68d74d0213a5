// The controller's persistence: restoring from a snapshot, and the changes it hands the store
// (whole, or streamed in pieces during a long command); controller.h has the contracts.
#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "controller/controller.h"
#include "controller/internal.h"
#include "model/codec.h"

namespace gpurent::controller {

// --- Persistence ------------------------------------------------------------------------------

Status Controller::restore(Snapshot snapshot) {
  const Timestamp start = now();
  GPURENT_CHECK(monitor_.restore(snapshot.monitoring));
  GPURENT_CHECK(accounts_.restore(snapshot));
  // Before the nodes: syncing a node into the scheduler applies its quarantined GPUs.
  restore_quarantines(snapshot.gpu_quarantines);
  for (auto& node : snapshot.nodes) {
    // Heartbeats are not persisted; every node gets a full timeout to report after a restart.
    node.last_heartbeat = start;
    // An agent may have seen generations that were served but never committed before a crash.
    // Jumping past them keeps "generation G" meaning one desired set, so the agent converges to
    // the restored state and its applied generation never vouches for a set it did not see.
    node.generation += kGenerationJumpOnRestore;
    touched_nodes_.push_back(node.id);
    touched_node_ids_.insert(node.id);
    for (const auto& gpu : node.gpus) monitor_.series().set_owner(gpu.uuid, node.id);
    const auto& restored = nodes_.add(std::move(node));
    sync_cluster_node(restored);
  }
  // Before the instances: a run's start is read from its usage record (restore_run_start).
  for (auto& usage : snapshot.usage) {
    if (usage.kind == model::UsageKind::kStoppedDisk && !usage.ended_at) {
      stopped_disks_.emplace(usage.instance_id, usage.id);
    }
    usage_by_tenant_[usage.tenant_id].push_back(usage.id);
    usage_.emplace(usage.id, std::move(usage));
  }
  std::sort(snapshot.instances.begin(), snapshot.instances.end(),
            [](const Instance& a, const Instance& b) {
              return std::tie(a.created_at, a.id) < std::tie(b.created_at, b.id);
            });
  for (auto& instance : snapshot.instances) {
    auto& restored = instances_.emplace(instance.id, std::move(instance)).first->second;
    append_to_creation_order(restored);
    restore_run_start(restored);
    if (restored.state == InstanceState::kPending || model::holds_gpus(restored.state)) {
      observe_request(restored.spec, 1);
    }
    last_queue_sequence_ = std::max(last_queue_sequence_, restored.queue_sequence);
    // A job task queues as one entry, its rank-0 member.
    if (restored.state == InstanceState::kPending && restored.job_rank == 0) enqueue(restored);
    if (model::holds_gpus(restored.state)) {
      GPURENT_TRY(assignment, assignment_of(restored));
      if (auto allocated = cluster_.allocate(assignment); !allocated) {
        return fail(Error::internal(
            fmt::format("restoring instance {}: {}", restored.id, allocated.error().message)));
      }
      assignments_.emplace(restored.id, std::move(assignment));
      hold(restored, 1);
      if (restored.state == InstanceState::kRunning && restored.spec.max_runtime_s &&
          restored.started_at) {
        deadlines_.emplace(*restored.started_at + Millis(*restored.spec.max_runtime_s * 1000),
                           restored.id);
      }
      for (const auto& gpu : restored.gpus) gpu_holders_[gpu].insert(restored.id);
      instances_on_node_[restored.node_id].insert(restored.id);
    }
  }
  for (auto& job : snapshot.jobs) {
    restore_started_tasks(job);
    job_order_.push_back(job.id);
    jobs_.emplace(job.id, std::move(job));
  }
  std::sort(job_order_.begin(), job_order_.end(), [this](const auto& a, const auto& b) {
    return std::tie(jobs_.at(a).created_at, a) < std::tie(jobs_.at(b).created_at, b);
  });
  for (size_t i = 0; i < job_order_.size(); ++i) job_position_[job_order_[i]] = i;
  for (auto& reservation : snapshot.reservations) {
    reservations_.emplace(reservation.id, std::move(reservation));
  }
  for (auto& quota : snapshot.quotas) quotas_.emplace(quota.tenant_id, std::move(quota));
  templates_.restore(std::move(snapshot.templates));
  GPURENT_CHECK(prices_.restore(std::move(snapshot.price_versions)));
  spot_.restore(std::move(snapshot.spot_prices));
  reindex_runs();
  std::sort(snapshot.volumes.begin(), snapshot.volumes.end(),
            [](const model::Volume& a, const model::Volume& b) {
              return std::tie(a.created_at, a.id) < std::tie(b.created_at, b.id);
            });
  for (auto& volume : snapshot.volumes) {
    if (volume.state == model::VolumeState::kAvailable && !volume.node_id.empty()) {
      volumes_on_node_[volume.node_id].insert(volume.id);
    }
    volume_order_.push_back(volume.id);
    volumes_.emplace(volume.id, std::move(volume));
  }
  idempotency_.restore(std::move(snapshot.idempotency));
  for (auto& record : snapshot.downtime) {
    downtime_of_[record.instance_id].push_back(record.id);
    if (!record.end) open_downtime_[record.instance_id] = record.id;
    downtime_.emplace(record.id, std::move(record));
  }
  return events_.restore(std::move(snapshot.events));
}

ChangeSet Controller::take_changes() {
  // Each changed object is copied once per batch, however often it changed: copying per change
  // made an array job's cost grow with the square of its size, and wrote each member twice
  // (created, then placed) and each node once per task placed on it.
  for (const auto& id : touched_instances_) changes_.instances.push_back(instances_.at(id));
  touched_instances_.clear();
  for (const auto& id : touched_nodes_) {
    changes_.nodes.push_back(nodes_.at(id));
    stored_generation_[id] = changes_.nodes.back().generation;
  }
  touched_nodes_.clear();
  touched_node_ids_.clear();
  for (const model::UsageRecord* usage : touched_usage_) changes_.usage.push_back(*usage);
  changes_.metered_usage.reserve(changes_.metered_usage.size() + metered_usage_.size());
  for (const model::UsageRecord* usage : metered_usage_) {
    if (usage->queued_batch != change_batch_) changes_.add_metered_usage(*usage);
  }
  touched_usage_.clear();
  metered_usage_.clear();
  ++change_batch_;
  for (const auto& id : touched_volumes_) changes_.volumes.push_back(volumes_.at(id));
  touched_volumes_.clear();
  touched_volume_ids_.clear();
  // A job's row holds its own fields; its tasks are rows of their own, and only the changed ones
  // are written (a job's task list is as long as its array).
  for (const auto& id : touched_jobs_) {
    model::Job& job = jobs_.at(id);
    auto tasks = std::move(job.tasks);  // the copy goes without them; then they are put back
    job.tasks.clear();
    changes_.jobs.push_back(job);
    job.tasks = std::move(tasks);
  }
  touched_jobs_.clear();
  for (const auto& [job_id, index] : touched_tasks_) {
    model::JobTask& task = jobs_.at(job_id).tasks.at(static_cast<size_t>(index));
    if (std::exchange(task.streamed, false)) continue;  // handed over as it is
    changes_.job_tasks.push_back({job_id, task});
  }
  touched_tasks_.clear();
  return std::exchange(changes_, ChangeSet{});
}

namespace {

ObjectRow row_of(const Instance& instance) {
  return {instance.id, instance.tenant_id, model::instance_row_json(instance)};
}

}  // namespace

ChangeSet Controller::take_changes_for_store() {
  for (const auto& id : touched_instances_) {
    const Instance& instance = instances_.at(id);
    if (instance.streamed_revision == instance.revision) continue;  // handed over as it is
    changes_.instance_rows.push_back(row_of(instance));
  }
  touched_instances_.clear();
  placed_unstreamed_.clear();
  return take_changes();
}

void Controller::stream_placed_rows(std::function<void(ChangeSet)> sink, size_t every) {
  row_sink_ = std::move(sink);
  rows_per_piece_ = every;
  placed_unstreamed_.clear();
}

void Controller::stream_placed_rows_if_due() {
  if (!row_sink_ || placed_unstreamed_.size() < rows_per_piece_) return;
  ChangeSet piece;
  piece.instance_rows.reserve(placed_unstreamed_.size());
  for (const auto& id : placed_unstreamed_) {
    Instance& instance = instances_.at(id);
    if (instance.streamed_revision == instance.revision) continue;  // placed twice in one piece
    piece.instance_rows.push_back(row_of(instance));
    instance.streamed_revision = instance.revision;
    if (instance.job_id.empty() || instance.job_rank != 0) continue;
    // A job member's task changed with its placement (its attempts): its row goes along.
    model::JobTask& task =
        jobs_.at(instance.job_id).tasks.at(static_cast<size_t>(instance.job_task));
    if (task.streamed) continue;  // a gang's task goes with its rank 0
    piece.job_tasks.push_back({instance.job_id, task});
    task.streamed = true;
  }
  placed_unstreamed_.clear();
  row_sink_(std::move(piece));
}

void Controller::touch(Instance& instance) {
  note_change(instance);
  if (instance.queued_batch == change_batch_) return;
  instance.queued_batch = change_batch_;
  touched_instances_.push_back(instance.id);
}

void Controller::note_change(Instance& instance) {
  ++instance.revision;
  if (instance.changed_batch == change_batch_) return;
  instance.changed_batch = change_batch_;
  changes_.changed_instances.push_back(instance.id);
}

void Controller::touch_node(Node& node, bool desired_set_changed) {
  if (desired_set_changed) {
    ++node.generation;
    changes_.woken_nodes.insert(node.id);
    if (node.generation - stored_generation_[node.id] < kGenerationsBetweenNodeWrites) return;
  }
  if (touched_node_ids_.insert(node.id).second) touched_nodes_.push_back(node.id);
}

void Controller::touch_usage(model::UsageRecord& usage) {
  if (usage.queued_batch == change_batch_) return;
  usage.queued_batch = change_batch_;
  touched_usage_.push_back(&usage);
}

void Controller::touch_metering(model::UsageRecord& usage) {
  if (usage.metered_batch == change_batch_) return;
  usage.metered_batch = change_batch_;
  metered_usage_.push_back(&usage);
}

}  // namespace gpurent::controller
