// The controller's batch jobs, advance reservations and tenant quotas (see model/job.h).
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
constexpr Millis kMaxReservationLength{366LL * 24 * 3600 * 1000};

}  // namespace

// --- Jobs ---------------------------------------------------------------------------------------

Job* Controller::job_of(const Instance& instance) {
  return const_cast<Job*>(std::as_const(*this).job_of(instance));
}

const Job* Controller::job_of(const Instance& instance) const {
  const auto it = jobs_.find(instance.job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

Result<CreatedJob> Controller::create_job(const Principal& caller, model::JobSpec spec,
                                          const std::optional<std::string>& idempotency_key,
                                          std::string fingerprint) {
  GPURENT_TRY(replayed,
              idempotency_.replayed_object(caller.tenant_id, idempotency_key, fingerprint));
  GPURENT_TRY(first, replay_from<CreatedJob>(jobs_, replayed));
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
  GPURENT_CHECK(check_reservation_use(caller, spec.task));
  // The balance must cover one task's gang for the minimum time; the balance check that runs
  // with metering stops everything of an overdrawn tenant.
  auto one_task = spec.task;
  one_task.gpu_count *= spec.nodes;
  GPURENT_CHECK(check_funds(caller.tenant_id, one_task));
  // Without queueing, the first task must start now; the later ones wait for it as usual.
  GPURENT_CHECK(check_placeable(spec.task, spec.nodes));
  observe_request(spec.task, spec.array * spec.nodes);

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
      Instance& member = add_instance(job.tenant_id, model::job_member_spec(job, index, rank));
      member.job_id = job.id;
      member.job_task = index;
      member.job_rank = rank;
      if (rank == 0) enqueue(member);
      tracker_.touch(member);
      task.members.push_back(member.id);
    }
    job.tasks.push_back(std::move(task));
  }
  job_position_[job.id] = job_order_.size();
  job_order_.push_back(job.id);
  const std::string id = job.id;
  Job& created = jobs_.emplace(id, std::move(job)).first->second;
  tracker_.touch_job(created);
  for (const auto& task : created.tasks) tracker_.touch_task(created, task.index);
  idempotency_.remember(caller.tenant_id, idempotency_key, std::move(fingerprint), id);
  schedule();
  return CreatedJob{jobs_.at(id), false};
}

Result<const Job*> Controller::job(const Principal& caller, std::string_view id) const {
  const auto it = jobs_.find(id);
  if (it != jobs_.end() && visible_to(caller, it->second.tenant_id)) return &it->second;
  std::vector<std::pair<const Job*, NamedObject>> candidates;
  for (const auto& job_id : job_order_) {
    const Job& candidate = jobs_.at(job_id);
    if (candidate.tenant_id == caller.tenant_id) {
      candidates.push_back({&candidate, {candidate.id, candidate.spec.task.name}});
    }
  }
  return find_by_name<Job>("job", id, candidates);
}

Result<JobPage> Controller::list_jobs(const Principal& caller, const JobFilter& filter,
                                      std::string_view cursor, size_t limit) const {
  size_t position = 0;
  if (!cursor.empty()) {
    const auto it = job_position_.find(std::string(cursor));
    // A cursor names a job; one the caller may not see is as unknown as a made-up one.
    if (it == job_position_.end() || !job(caller, cursor)) {
      return fail(Error::invalid("invalid_query", "unknown cursor"));
    }
    position = it->second + 1;
  }
  const std::optional<std::string> tenant =
      caller.is_operator() ? filter.tenant_id : caller.tenant_id;
  JobPage page;
  for (; position < job_order_.size(); ++position) {
    const Job& job = jobs_.at(job_order_[position]);
    if (tenant && job.tenant_id != *tenant) continue;
    if (filter.state && job.state != *filter.state) continue;
    if (page.items.size() == limit) {
      page.next_cursor = page.items.back()->id;
      break;
    }
    page.items.push_back(&job);
  }
  return page;
}

Result<Job> Controller::cancel_job(const Principal& caller, std::string_view id) {
  GPURENT_TRY(found, this->job(caller, id));
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
  queue_changed_ = true;
  return job;
}

void Controller::member_running(const Instance& member) {
  Job* job = job_of(member);
  if (!job) return;
  JobTask& task = job->tasks.at(member.job_task);
  if (task.state != JobState::kQueued) return;
  // Not written: the member's row says it started, and restore_started_tasks reads the task's
  // state from there (an array's start would otherwise write every task row a second time).
  task.state = JobState::kRunning;
  // The job's own row changes with its first running member only (what derive_job_state gives
  // with a task running, without its pass over every task: per task, that pass made starting an
  // array quadratic). Touched for every member, each agent's report of an array's start carried
  // a copy of the job, and the committer wrote the row once per report in every group commit.
  if (job->started_at && job->reason.empty() && job->state == JobState::kRunning) return;
  if (!job->started_at) job->started_at = now();
  job->reason = "";
  job->state = JobState::kRunning;
  tracker_.touch_job(*job);
}

void Controller::restore_started_tasks(Job& job) const {
  for (auto& task : job.tasks) {
    if (task.state != JobState::kQueued) continue;
    // Running from its first member's start until it settles; a requeued task's members wait
    // pending, and a placed one's have not started in their new run.
    const bool started = std::ranges::any_of(task.members, [&](const std::string& id) {
      const auto member = instances_.find(id);
      return member != instances_.end() && member->second.started_at &&
             member->second.state != InstanceState::kPending;
    });
    if (started) task.state = JobState::kRunning;
  }
}

void Controller::member_ended(const Instance& member) {
  Job* job = job_of(member);
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
      if (member.job_rank == 0) enqueue(member);
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

Status Controller::check_reservation_use(const Principal& caller, model::InstanceSpec& spec) const {
  if (spec.pricing != model::PricingModel::kReserved) {
    if (!spec.reservation_id.empty()) {
      return fail(Error::invalid("invalid_field", "reservation_id needs pricing reserved"));
    }
    return {};
  }
  const auto it = reservations_.find(spec.reservation_id);
  if (it == reservations_.end() || it->second.tenant_id != caller.tenant_id) {
    return fail(Error::not_found("reservation", spec.reservation_id));
  }
  const Reservation& reservation = it->second;
  if (reservation.state == ReservationState::kEnded ||
      reservation.state == ReservationState::kCancelled) {
    return fail(Error::conflict(
        "reservation_over",
        fmt::format("reservation {} is {}", reservation.id, model::to_string(reservation.state))));
  }
  if (spec.gpu_types.empty()) spec.gpu_types = {reservation.gpu_type};
  if (spec.gpu_types != std::vector<std::string>{reservation.gpu_type} ||
      spec.gpu_count > reservation.gpu_count || spec.gpu_milli != sched::kMilliPerGpu) {
    return fail(
        Error::unprocessable("reservation_mismatch",
                             fmt::format("reservation {} holds {} whole {} GPU(s)", reservation.id,
                                         reservation.gpu_count, reservation.gpu_type)));
  }
  return {};
}

namespace {

// The one rule a requested window breaks, if any: the first of them, with what to do instead.
Status check_reservation_window(const NewReservation& request, Timestamp now) {
  const auto invalid = [](std::string message) {
    return fail(Error::invalid("invalid_field", std::move(message)));
  };
  if (request.gpu_count < 1) return invalid("gpu_count must be at least 1");
  if (request.end <= request.start) {
    return invalid(fmt::format("the window ends ({}) before it starts ({})",
                               format_rfc3339(request.end), format_rfc3339(request.start)));
  }
  if (request.end <= now) {
    return invalid(
        fmt::format("the window ended at {}, in the past; book one that ends later "
                    "(e.g. --start +1h --duration 2h)",
                    format_rfc3339(request.end)));
  }
  if (request.end - request.start > kMaxReservationLength) {
    return invalid(
        fmt::format("a window is at most {} days long",
                    std::chrono::duration_cast<std::chrono::days>(kMaxReservationLength).count()));
  }
  return {};
}

}  // namespace

Result<Reservation> Controller::quote_reservation(const Principal& caller,
                                                  NewReservation request) const {
  std::string tenant_id = request.tenant_id.empty() ? caller.tenant_id : request.tenant_id;
  if (tenant_id != caller.tenant_id && !caller.is_operator()) {
    return fail(forbidden("book for another tenant"));
  }
  if (!accounts_.has_tenant(tenant_id)) return fail(Error::not_found("tenant", tenant_id));
  if (!model::find_gpu_type(request.gpu_type)) {
    return fail(Error::unprocessable("unknown_gpu_type",
                                     model::unknown_gpu_type_message(request.gpu_type)));
  }
  const Timestamp t = now();
  if (request.term_days) {
    request.start = std::max(request.start, t);
    request.end = request.start + std::chrono::days(*request.term_days);
  }
  GPURENT_CHECK(check_reservation_window(request, t));
  request.start = std::max(request.start, t);
  // Capacity: GPUs of the type on nodes that take work. Admission refuses a booking that would
  // reserve more than that at any instant of its window.
  int64_t capacity = 0;
  for (const auto& [id, node] : nodes_) {
    if (node.state != model::NodeState::kReady || node.cordoned) continue;
    for (const auto& gpu : node.gpus) capacity += gpu.type == request.gpu_type;
  }
  std::vector<std::pair<Timestamp, int>> changes;  // (+count at start, -count at end)
  for (const auto& [id, other] : reservations_) {
    if (other.gpu_type != request.gpu_type || other.end <= request.start ||
        other.start >= request.end ||
        (other.state != ReservationState::kBooked && other.state != ReservationState::kActive)) {
      continue;
    }
    changes.emplace_back(std::max(other.start, request.start), other.gpu_count);
    changes.emplace_back(other.end, -other.gpu_count);
  }
  std::sort(changes.begin(), changes.end());  // ends sort before starts at one instant
  int64_t booked = 0, peak = 0;
  for (const auto& [at, delta] : changes) {
    booked += delta;
    peak = std::max(peak, booked);
  }
  if (peak + request.gpu_count > capacity) {
    return fail(Error::conflict(
        "overbooked",
        fmt::format("{} {} GPU(s) take work; up to {} are already reserved in that window, so at "
                    "most {} more can be: book fewer, or another window (`gpurent reservation "
                    "ls` shows the bookings)",
                    capacity, request.gpu_type, peak, std::max<int64_t>(capacity - peak, 0))));
  }
  Reservation reservation{.tenant_id = std::move(tenant_id),
                          .gpu_type = std::move(request.gpu_type),
                          .gpu_count = request.gpu_count,
                          .start = request.start,
                          .end = request.end,
                          .state = ReservationState::kBooked,
                          .created_at = t,
                          .payment = request.payment};
  if (reservation.start <= t) reservation.state = ReservationState::kActive;
  GPURENT_CHECK(price_reservation(reservation));
  return reservation;
}

Result<CreatedReservation> Controller::create_reservation(
    const Principal& caller, NewReservation request,
    const std::optional<std::string>& idempotency_key, std::string fingerprint) {
  GPURENT_TRY(replayed,
              idempotency_.replayed_object(caller.tenant_id, idempotency_key, fingerprint));
  GPURENT_TRY(first, replay_from<CreatedReservation>(reservations_, replayed));
  if (first) return std::move(*first);
  GPURENT_TRY(reservation, quote_reservation(caller, std::move(request)));
  reservation.id = rng_.id("r-");
  settle_reservation(reservation);  // the first payment
  changes_.reservations.push_back(reservation);
  queue_changed_ = true;
  idempotency_.remember(caller.tenant_id, idempotency_key, std::move(fingerprint), reservation.id);
  return CreatedReservation{reservations_.emplace(reservation.id, reservation).first->second,
                            false};
}

std::vector<const Reservation*> Controller::reservations(const Principal& caller) const {
  std::vector<const Reservation*> out;
  for (const auto& [id, reservation] : reservations_) {
    if (visible_to(caller, reservation.tenant_id)) out.push_back(&reservation);
  }
  std::sort(out.begin(), out.end(), [](const Reservation* a, const Reservation* b) {
    return std::tie(a->start, a->id) < std::tie(b->start, b->id);
  });
  return out;
}

Result<Reservation> Controller::cancel_reservation(const Principal& caller, std::string_view id) {
  const auto it = reservations_.find(id);
  if (it == reservations_.end() || !visible_to(caller, it->second.tenant_id)) {
    return fail(Error::not_found("reservation", id));
  }
  Reservation& reservation = it->second;
  if (reservation.state == ReservationState::kBooked ||
      reservation.state == ReservationState::kActive) {
    // Before its window a reservation is refunded; from its start it is a commitment
    // (billing/reserved.h).
    if (auto refund = billing::refund_unstarted(reservation, now())) {
      GPURENT_CHECK(accounts_.post(std::move(*refund)));
    }
    reservation.state = ReservationState::kCancelled;
    settled_.reset();  // what it held back is free, and its work waits for nothing
    settle_reservation(reservation);
    changes_.reservations.push_back(reservation);
    advance_reservations();
  }
  return reservation;
}

void Controller::advance_reservations() {
  const Timestamp t = now();
  for (auto& [id, reservation] : reservations_) {
    auto state = reservation.state;
    if (state == ReservationState::kBooked && reservation.start <= t)
      state = ReservationState::kActive;
    if (state == ReservationState::kActive && reservation.end <= t)
      state = ReservationState::kEnded;
    const bool over = state == ReservationState::kEnded || state == ReservationState::kCancelled;
    if (state != reservation.state) {
      reservation.state = state;
      changes_.reservations.push_back(reservation);
      queue_changed_ = true;
    }
    if (!over || !reserved_in_use_.contains(id)) continue;
    // The window is over: the work that ran in it stops.
    if (reserved_in_use_[id] == 0) {
      reserved_in_use_.erase(id);
      continue;
    }
    for (auto& [instance_id, instance] : instances_) {
      if (instance.spec.reservation_id == id && (instance.state == InstanceState::kStarting ||
                                                 instance.state == InstanceState::kRunning)) {
        request_stop(instance, fmt::format("its reservation {} is {}", id,
                                           model::to_string(reservation.state)));
      }
    }
  }
}

// --- Quotas -------------------------------------------------------------------------------------

Result<model::Quota> Controller::set_quota(const Principal& caller, model::Quota quota) {
  if (!caller.is_operator()) return fail(forbidden("set quotas"));
  if (!accounts_.has_tenant(quota.tenant_id))
    return fail(Error::not_found("tenant", quota.tenant_id));
  if (quota.weight < 1 || quota.weight > 1000 ||
      (quota.max_instances && *quota.max_instances < 0)) {
    return fail(Error::invalid("invalid_field", "weight must be 1..1000 and limits ≥ 0"));
  }
  for (const auto& [type, limit] : quota.max_gpus_per_type) {
    if (!model::find_gpu_type(type) || limit < 0) {
      return fail(Error::invalid("invalid_field",
                                 fmt::format("max_gpus_per_type: '{}' needs a known type and a "
                                             "limit ≥ 0",
                                             type)));
    }
  }
  changes_.quotas.push_back(quota);
  queue_changed_ = true;
  quotas_.insert_or_assign(quota.tenant_id, quota);
  schedule();
  return quota;
}

Result<model::Quota> Controller::quota(const Principal& caller, std::string_view tenant_id) const {
  if (!visible_to(caller, tenant_id) || !accounts_.has_tenant(tenant_id)) {
    return fail(Error::not_found("tenant", tenant_id));
  }
  const auto it = quotas_.find(tenant_id);
  if (it != quotas_.end()) return it->second;
  return model::Quota{std::string(tenant_id), {}, std::nullopt, 1};
}

}  // namespace gpurent::controller
