// The controller's batch jobs (model/job.h), and its side of reservations and quotas: what a
// booking or a new quota wakes, and the work a reservation's end stops.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "billing/reserved.h"
#include "controller/controller.h"
#include "controller/internal.h"
#include "model/gpu_catalog.h"

namespace gpurent::controller {

using model::Job;
using model::JobState;
using model::JobTask;
using model::Reservation;
using model::ReservationState;

namespace {

constexpr int kMaxJobMembers = 100'000;  // array × nodes: instances one job may create

}  // namespace

// --- Jobs ---------------------------------------------------------------------------------------

Result<CreatedJob> Controller::create_job(const Principal& caller, model::JobSpec spec,
                                          const std::optional<std::string>& idempotency_key,
                                          std::string fingerprint) {
  GPURENT_TRY(first, replayed_creation<CreatedJob>(idempotency_, caller, idempotency_key,
                                                   fingerprint, jobs_.all()));
  if (first) return std::move(*first);
  if (spec.array < 1 || spec.array > model::kMaxJobArray || spec.nodes < 1 ||
      spec.nodes > model::kMaxJobNodes || spec.retries < 0 ||
      spec.retries > model::kMaxJobRetries || int64_t{spec.array} * spec.nodes > kMaxJobMembers) {
    return fail(Error::invalid("invalid_field",
                               fmt::format("array must be 1..{}, nodes 1..{}, retries 0..{}, and "
                                           "array × nodes at most {}",
                                           model::kMaxJobArray, model::kMaxJobNodes,
                                           model::kMaxJobRetries, kMaxJobMembers)));
  }
  GPURENT_CHECK(validate_spec(spec.task, spec.nodes));
  GPURENT_CHECK(volumes_.resolve_names(caller, spec.task));
  GPURENT_CHECK(volumes_.check_mounts(caller.tenant_id, spec.task));
  GPURENT_CHECK(reservations_.check_use(caller, spec.task));
  // The balance must cover one task's gang for the minimum time; the balance check that runs
  // with metering stops everything of an overdrawn tenant.
  auto one_task = spec.task;
  one_task.gpu_count *= spec.nodes;
  GPURENT_CHECK(check_funds(caller.tenant_id, one_task));
  GPURENT_CHECK(check_caps(caller.tenant_id, spec.array, spec.array));
  // Without queueing, the first task must start now; the later ones wait for it as usual.
  GPURENT_CHECK(check_placeable(spec.task, spec.nodes));
  scheduler_.observe_request(spec.task, spec.array * spec.nodes);

  Job job;
  job.id = rng_.id("j-");
  job.tenant_id = caller.tenant_id;
  job.spec = std::move(spec);
  job.created_at = now();
  job.reason = "waiting for capacity";
  if (job.spec.task.name.empty()) job.spec.task.name = job.id;  // the members' names' base
  for (int index = 0; index < job.spec.array; ++index) {
    JobTask task;
    task.index = index;
    for (int rank = 0; rank < job.spec.nodes; ++rank) {
      Instance& member = instances_.add(job.tenant_id, model::job_member_spec(job, index, rank));
      member.job_id = job.id;
      member.job_task = index;
      member.job_rank = rank;
      if (rank == 0) scheduler_.enqueue(member);
      tracker_.touch(member);
      task.members.push_back(member.id);
    }
    job.tasks.push_back(std::move(task));
  }
  const std::string id = job.id;
  Job& created = jobs_.add(std::move(job));
  tracker_.touch_job(created);
  for (const auto& task : created.tasks) tracker_.touch_task(created, task.index);
  idempotency_.remember(caller.tenant_id, idempotency_key, std::move(fingerprint), id);
  schedule();
  return CreatedJob{jobs_.at(id), false};
}

Result<Job> Controller::cancel_job(const Principal& caller, std::string_view id) {
  GPURENT_TRY(found, jobs_.get(caller, id));
  Job& job = jobs_.at(found->id);
  for (auto& task : job.tasks) {
    if (model::is_final(task.state)) continue;
    task.state = JobState::kCancelled;
    tracker_.touch_task(job, task.index);
    for (const auto& member_id : task.members) {
      Instance& member = instances_.at(member_id);
      if (member.state == InstanceState::kPending) {
        withdraw(member, "cancelled with its job");
      } else if (member.state == InstanceState::kStarting ||
                 member.state == InstanceState::kRunning) {
        member.requeue_requested = false;
        request_stop(member, "cancelled with its job");
      }
    }
  }
  job.state = model::derive_job_state(job.tasks);
  job.reason = "cancelled by the tenant";
  if (!job.ended_at) job.ended_at = now();
  tracker_.touch_job(job);
  scheduler_.queue_changed();
  return job;
}

void Controller::restore_started_tasks(Job& job) const {
  for (auto& task : job.tasks) {
    if (task.state != JobState::kQueued) continue;
    // Running from its first member's start until it settles; a requeued task's members wait
    // pending, and a placed one's have not started in their new run.
    const bool started = std::ranges::any_of(task.members, [&](const std::string& id) {
      const auto member = instances_.all().find(id);
      return member != instances_.all().end() && member->second.started_at &&
             member->second.state != InstanceState::kPending;
    });
    if (started) task.state = JobState::kRunning;
  }
}

void Controller::member_ended(const Instance& member) {
  Job* job = jobs_.of(member);
  if (!job) return;
  JobTask& task = job->tasks.at(member.job_task);
  if (model::is_final(task.state)) return;
  const bool failed = member.state == InstanceState::kFailed ||
                      member.state == InstanceState::kPreempted ||
                      member.state == InstanceState::kPending ||
                      (member.state == InstanceState::kStopped && member.exit_code != 0);
  if (failed) {
    if (!task.exit_code && member.exit_code) {
      task.exit_code = member.exit_code;
      tracker_.touch_task(*job, task.index);
    }
    // A gang is all or nothing: the other members stop too.
    for (const auto& sibling_id : task.members) {
      Instance& sibling = instances_.at(sibling_id);
      if (sibling.state == InstanceState::kStarting || sibling.state == InstanceState::kRunning) {
        request_stop(sibling, fmt::format("member {} of its task ended", member.id));
      }
    }
  }
  settle_task(*job, task);
}

void Controller::settle_task(Job& job, JobTask& task) {
  bool preempted = false, moved = false, all_zero = true;
  for (const auto& member_id : task.members) {
    const Instance& member = instances_.at(member_id);
    if (model::holds_gpus(member.state)) return;  // not settled until every member is gone
    preempted |= member.state == InstanceState::kPreempted;
    moved |= member.state == InstanceState::kPending;
    all_zero &= member.state == InstanceState::kStopped && member.exit_code == 0;
  }
  const auto requeue = [&](const std::string& reason) {
    for (const auto& member_id : task.members) {
      Instance& member = instances_.at(member_id);
      member.state = InstanceState::kPending;
      member.exit_code.reset();
      member.reason = reason;
      if (member.job_rank == 0) scheduler_.enqueue(member);
      tracker_.touch(member);
    }
    task.state = JobState::kQueued;
  };
  if (preempted) {
    task.state = JobState::kPreempted;
  } else if (moved) {
    requeue("moving: waiting for capacity on another node");
  } else if (all_zero) {
    task.state = JobState::kSucceeded;
    task.exit_code = instances_.at(task.members.front()).exit_code;
  } else if (task.attempts <= job.spec.retries) {  // failed, or stopped before it finished
    requeue(fmt::format("retrying after attempt {} of {}", task.attempts, job.spec.retries + 1));
  } else {
    task.state = JobState::kFailed;
    if (!task.exit_code) task.exit_code = instances_.at(task.members.front()).exit_code;
  }
  tracker_.touch_task(job, task.index);
  job.state = model::derive_job_state(job.tasks);
  if (model::is_final(job.state) && !job.ended_at) {
    job.ended_at = now();
    job.reason = job.state == JobState::kSucceeded
                     ? ""
                     : fmt::format("task {} {}", task.index, model::to_string(task.state));
  }
  tracker_.touch_job(job);
}

// --- Reservations -------------------------------------------------------------------------------

Result<CreatedReservation> Controller::create_reservation(
    const Principal& caller, NewReservation request,
    const std::optional<std::string>& idempotency_key, std::string fingerprint) {
  GPURENT_TRY(created, reservations_.book(caller, std::move(request), idempotency_key,
                                          std::move(fingerprint)));
  // What bookings hold back from other work changed.
  if (!created.replayed) scheduler_.queue_changed();
  return created;
}

Result<Reservation> Controller::cancel_reservation(const Principal& caller, std::string_view id) {
  GPURENT_TRY(reservation, reservations_.cancel(caller, id));
  if (reservation.state == ReservationState::kCancelled) {
    scheduler_.forget_settled_pass();  // what it held back is free, and its work waits for nothing
    advance_reservations();
  }
  return reservation;
}

void Controller::advance_reservations() {
  const auto advanced = reservations_.advance();
  if (advanced.changed) scheduler_.queue_changed();
  // A window that is over: the work that ran in it stops.
  for (const Reservation* over : advanced.over_in_use) {
    for (auto& [instance_id, instance] : instances_.all()) {
      if (instance.spec.reservation_id == over->id && (instance.state == InstanceState::kStarting ||
                                                       instance.state == InstanceState::kRunning)) {
        request_stop(instance, fmt::format("its reservation {} is {}", over->id,
                                           model::to_string(over->state)));
      }
    }
  }
}

// --- Quotas -------------------------------------------------------------------------------------

Result<model::Quota> Controller::set_quota(const Principal& caller, model::Quota quota) {
  GPURENT_TRY(set, accounts_.quotas().set(caller, std::move(quota)));
  // A raised limit or a new weight may let queued work in now.
  scheduler_.queue_changed();
  schedule();
  return set;
}

}  // namespace gpurent::controller
