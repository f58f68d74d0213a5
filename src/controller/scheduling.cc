// The controller's side of scheduling: the Scheduler's decisions applied (instances placed, gangs
// given their rendezvous, spot work stopped), and the mirror of nodes into the cluster view.

#include <spdlog/spdlog.h>

#include "controller/controller.h"
#include "controller/internal.h"

namespace gpurent::controller {

using model::Job;
using model::JobTask;

void Controller::schedule() {
  scheduler_.pass([this](Instance& request, Scheduler::Decision decision) {
    apply(request, std::move(decision));
    // Between two requests, where no placement is half done.
    tracker_.stream_placed_rows_if_due();
  });
}

void Controller::apply(Instance& request, Scheduler::Decision decision) {
  switch (decision.kind) {
    case Scheduler::Decision::Kind::kPlace:
      place_members(request, std::move(decision.assignment));
      break;
    case Scheduler::Decision::Kind::kWait:
      if (!decision.reason.empty()) set_reason(request, std::move(decision.reason));
      break;
    case Scheduler::Decision::Kind::kMakeRoom:
      for (Instance* victim : decision.victims) {
        victim->preempt_requested = true;
        std::string why =
            fmt::format("preempted by {} work", model::to_string(request.spec.pricing));
        events_.record(victim->tenant_id, victim->id, model::event_kind::kInstancePreempted, why);
        request_stop(*victim, std::move(why));
      }
      break;
    case Scheduler::Decision::Kind::kNone:
      break;
  }
}

void Controller::set_reason(Instance& instance, std::string reason) {
  if (instance.reason == reason) return;
  instance.reason = std::move(reason);
  tracker_.touch(instance);
}

void Controller::place_members(Instance& first, sched::Assignment assignment) {
  if (first.job_id.empty()) {
    scheduler_.dequeue(first);
    place(first, std::move(assignment.nodes.front()), nullptr);
    return;
  }
  Job& job = jobs_.at(first.job_id);
  JobTask& task = job.tasks.at(first.job_task);
  scheduler_.dequeue(first);
  task.attempts += 1;
  task.exit_code.reset();
  tracker_.touch_task(job, task.index);
  const Node& master = nodes_.at(placements_.cluster().spec(assignment.nodes.front().node).id);
  const std::string& address = master.address.empty() ? master.name : master.address;
  const int port = free_master_port(master.id);
  for (size_t rank = 0; rank < assignment.nodes.size(); ++rank) {
    Instance& member = instances_.at(task.members.at(rank));
    member.master_address = address;
    member.master_port = port;
    place(member, std::move(assignment.nodes[rank]), &job);
  }
  // What derive_job_state gives with this task unfinished and attempted, without its pass over
  // every task (per placement, that pass made placing an array quadratic).
  job.state = model::JobState::kRunning;
  tracker_.touch_job(job);
}

void Controller::place(Instance& instance, sched::NodeAssignment part, const Job* job) {
  Node& node = nodes_.at(placements_.cluster().spec(part.node).id);
  const auto gpus = gpus_by_index(node);
  if (!instance.node_id.empty() && instance.node_id != node.id) {
    // The node it ran on before deletes what it left there.
    if (const auto before = nodes_.find(instance.node_id); before != nodes_.end()) {
      tracker_.touch_node(before->second, /*desired_set_changed=*/true);
    }
  }
  instances_.files_moved(instance, node.id);
  instance.node_id = node.id;
  instance.start_on_node.clear();
  instance.gpus.clear();
  for (int position : part.gpus) {
    instance.gpus.push_back(gpus.at(position)->uuid);
  }
  instance.gpu_type = placements_.cluster().spec(part.node).gpu_type;
  instance.gpu_milli = part.gpu_milli;
  placements_.add(instance, std::move(part));
  instance.run += 1;
  instance.state = InstanceState::kStarting;
  instance.reason = "";
  instance.started_at.reset();
  instance.ended_at.reset();
  volumes_.pin(instance, node);
  tracker_.touch_node(node, /*desired_set_changed=*/true);
  instance.placed_generation = node.generation;
  tracker_.touch(instance);
  tracker_.placed(instance, job);
  spdlog::debug("placed instance={} run={} node={} gpus={}", instance.id, instance.run, node.id,
                fmt::join(instance.gpus, ","));
}

int Controller::free_master_port(std::string_view node_id) const {
  // Rendezvous ports of the gangs whose rank 0 runs on this node: each gang gets its own.
  std::vector<int> taken;
  for (const auto& [id, placed] : placements_.on_node(node_id)) {
    const Instance& other = *placed;
    if (other.job_id.empty() || other.job_rank != 0) continue;  // only a gang's rank 0 listens
    if (other.master_port != 0) taken.push_back(other.master_port);
  }
  int port = model::kGangMasterPort;
  while (std::find(taken.begin(), taken.end(), port) != taken.end()) ++port;
  return port;
}

Result<sched::Assignment> Controller::assignment_of(const Instance& instance) const {
  const auto node_it = nodes_.find(instance.node_id);
  const auto handle = placements_.cluster().find(instance.node_id);
  if (node_it == nodes_.end() || !handle) {
    return fail(Error::internal(
        fmt::format("instance {} is on unknown node {}", instance.id, instance.node_id)));
  }
  const auto gpus = gpus_by_index(node_it->second);
  sched::NodeAssignment part{.node = *handle,
                             .gpus = {},
                             .gpu_milli = instance.gpu_milli,
                             .cpu_milli = int64_t{instance.spec.cpu} * 1000,
                             .memory_mib = int64_t{instance.spec.memory_gb} * kMibPerGib,
                             .disk_gb = instance.spec.disk_gb};
  for (const auto& uuid : instance.gpus) {
    const auto it = std::find_if(gpus.begin(), gpus.end(),
                                 [&](const model::Gpu* gpu) { return gpu->uuid == uuid; });
    if (it == gpus.end()) {
      return fail(Error::internal(fmt::format("instance {} holds GPU {} that node {} lacks",
                                              instance.id, uuid, instance.node_id)));
    }
    part.gpus.push_back(static_cast<int>(it - gpus.begin()));
  }
  std::sort(part.gpus.begin(), part.gpus.end());
  return sched::Assignment{{std::move(part)}};
}

void Controller::sync_cluster_node(const Node& node) {
  scheduler_.nodes_changed();
  if (auto synced = placements_.cluster().upsert_node(node_spec(node)); !synced) {
    spdlog::error("node={} cannot be scheduled: {}", node.id, synced.error().message);
    return;
  }
  sync_gpu_availability(node);
  update_schedulable(node);
}

void Controller::update_schedulable(const Node& node) {
  scheduler_.nodes_changed();
  ready_gpu_capacity_.reset();
  if (const auto handle = placements_.cluster().find(node.id)) {
    placements_.cluster().set_schedulable(*handle,
                                          node.state == NodeState::kReady && !node.cordoned);
  }
}

Status Controller::check_invariants() const {
  GPURENT_CHECK(placements_.check_invariants(instances_.all()));
  const auto broken = [](const std::string& what) {
    return fail(Error::internal("controller invariant broken: " + what));
  };
  GPURENT_CHECK(reservations_.check_invariants());
  if (ready_gpu_capacity_ && *ready_gpu_capacity_ != count_ready_gpus()) {
    return broken("the spot market's count of ready GPUs is stale");
  }
  for (const auto& [id, instance] : instances_.all()) {
    // Only a start that has not been placed yet waits for a node.
    const bool starting = instance.state == InstanceState::kPending ||
                          (instance.state == InstanceState::kStopping && instance.start_requested);
    if (!instance.start_on_node.empty() && !starting) {
      return broken(fmt::format("instance {} is {} and waits for node {}", id,
                                model::to_string(instance.state), instance.start_on_node));
    }
  }
  for (const auto& [id, job] : jobs_.all()) {
    for (const auto& task : job.tasks) {
      int placed = 0, pending = 0;
      for (const auto& member_id : task.members) {
        const auto state = instances_.at(member_id).state;
        placed += state == InstanceState::kStarting;
        pending += state == InstanceState::kPending;
      }
      if (placed != 0 && pending != 0) {
        return broken(fmt::format("job {} task {} is placed in part", id, task.index));
      }
    }
  }
  return {};
}

}  // namespace gpurent::controller
