// Batch jobs and advance reservations.
//
// A job runs a command to completion. It has `array` tasks (like Slurm job arrays: each gets its
// index in GPURENT_ARRAY_INDEX), and each task runs on `nodes` nodes at once, all placed together
// or not at all (a gang: the members get MASTER_ADDR, MASTER_PORT, RANK, NODE_RANK, WORLD_SIZE and
// LOCAL_WORLD_SIZE as torchrun expects). Every member of every task runs as an instance owned by
// the job, so placement, preemption, logs and billing are the instances'. A failed task runs
// again up to `retries` times. The job's state follows its tasks' (see derive_job_state).
//
// A reservation books gpu_count GPUs of one type for [start, end). Admission refuses a booking
// that would, at any instant, reserve more GPUs of the type than the platform has. During the
// window the capacity is held for the tenant's reserved work; before it, only spot work and work
// that declares it ends in time may use it.
//
// A reservation is a reserved term: it is paid for, at the on-demand price in force when it was
// booked less the discount its length earns, up front or month by month (billing/reserved.h);
// the reserved work that runs on it pays no GPU price.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "model/agent_protocol.h"
#include "model/instance.h"

namespace gpurent::model {

enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled, kPreempted };
std::string_view to_string(JobState state);
bool parse_job_state(std::string_view text, JobState* out);
inline bool from_string(std::string_view text, JobState* out) { return parse_job_state(text, out); }
bool is_final(JobState state);

inline constexpr int kMaxJobArray = 100'000;
inline constexpr int kMaxJobNodes = 256;
inline constexpr int kMaxJobRetries = 100;
inline constexpr int kGangMasterPort = 29500;

struct JobSpec {
  // What each member runs and needs on its node: GPU types and count per node, CPU, memory,
  // command, env, pricing, priority, max_runtime_s; queue false: the first task starts now or
  // the job is refused.
  InstanceSpec task;
  int nodes = 1;    // members per task
  int array = 1;    // tasks
  int retries = 0;  // extra runs of a failed task
};

struct JobTask {
  int index = 0;
  JobState state = JobState::kQueued;
  int attempts = 0;                  // runs started so far
  std::optional<int> exit_code;      // rank 0's, or the first failing member's
  std::vector<std::string> members;  // instance ids, by rank
};

template <class V, schema::Of<JobTask> S>
void fields(V& visit, S& x) {
  visit("attempts", x.attempts);
  visit("exit_code", x.exit_code);
  visit("index", x.index);
  visit("members", x.members);
  visit("state", x.state);
}

struct Job {
  std::string id;
  std::string tenant_id;
  JobSpec spec;
  JobState state = JobState::kQueued;
  Timestamp created_at{};
  std::optional<Timestamp> started_at;  // first member running
  std::optional<Timestamp> ended_at;    // every task final
  std::string reason;
  std::vector<JobTask> tasks;
  int64_t revision = 0;
};

// The spec's members are the job's own: {"task": ..., "nodes": ..., ...}.
template <class V, schema::Of<Job> S>
void fields(V& visit, S& x) {
  visit("array", x.spec.array);
  visit("created_at", x.created_at);
  visit("ended_at", x.ended_at, schema::kOptional);
  visit("id", x.id);
  visit("nodes", x.spec.nodes);
  visit("reason", x.reason);
  visit("retries", x.spec.retries);
  visit("revision", x.revision);
  visit("started_at", x.started_at, schema::kOptional);
  visit("state", x.state);
  visit("task", x.spec.task);
  visit("tasks", x.tasks);
  visit("tenant_id", x.tenant_id);
}

// The job's state from its tasks': running while any task is queued or running and one has
// started; queued before that; once all are final: cancelled, failed, preempted or succeeded,
// in that precedence.
JobState derive_job_state(const std::vector<JobTask>& tasks);

// What member `rank` of task `index` runs: the job's task spec, named "<task name>-<index>-<rank>".
// A member's spec is this, always, so the store need not keep it with every member.
InstanceSpec job_member_spec(const Job& job, int index, int rank);
// A placed member's place in the job, from its task, rank and gang rendezvous, as its node is told
// (the node makes the platform's variables from it: model::job_member_env in agent_protocol.h).
JobMemberPlacement job_member_placement(const Job& job, const Instance& member);

enum class ReservationState { kBooked, kActive, kEnded, kCancelled };
std::string_view to_string(ReservationState state);
bool parse_reservation_state(std::string_view text, ReservationState* out);
inline bool from_string(std::string_view text, ReservationState* out) {
  return parse_reservation_state(text, out);
}

enum class ReservationPayment { kUpfront, kMonthly };
std::string_view to_string(ReservationPayment payment);
bool parse_reservation_payment(std::string_view text, ReservationPayment* out);
inline bool from_string(std::string_view text, ReservationPayment* out) {
  return parse_reservation_payment(text, out);
}

struct Reservation {
  std::string id;
  std::string tenant_id;
  std::string gpu_type;
  int gpu_count = 0;
  Timestamp start{};
  Timestamp end{};
  ReservationState state = ReservationState::kBooked;
  Timestamp created_at{};
  // The term's price, fixed at booking (billing/reserved.h says how it is paid and earned).
  ReservationPayment payment = ReservationPayment::kUpfront;
  Micros price_per_gpu_hour = 0;  // on-demand when booked
  int discount_permille = 0;
  Micros total = 0;       // what the whole term costs
  Micros paid = 0;        // moved from cash to the reservation's prepaid account so far
  Micros recognised = 0;  // moved on to revenue so far
  int periods_paid = 0;   // monthly: payments made (the first at booking)
  bool refunded = false;  // cancelled before its window: what was paid went back to cash
};

// Reservations booked before reserved terms were priced carry no price: free, nothing owed.
template <class V, schema::Of<Reservation> S>
void fields(V& visit, S& x) {
  visit("created_at", x.created_at);
  visit("discount_permille", x.discount_permille, schema::kOptional);
  visit("end", x.end);
  visit("gpu_count", x.gpu_count);
  visit("gpu_type", x.gpu_type);
  visit("id", x.id);
  visit("paid", x.paid, schema::kOptional);
  visit("payment", x.payment, schema::kOptional);
  visit("periods_paid", x.periods_paid, schema::kOptional);
  visit("price_per_gpu_hour", x.price_per_gpu_hour, schema::kOptional);
  visit("recognised", x.recognised, schema::kOptional);
  visit("refunded", x.refunded, schema::kOptional);
  visit("start", x.start);
  visit("state", x.state);
  visit("tenant_id", x.tenant_id);
  visit("total", x.total, schema::kOptional);
}

// Per-tenant limits and fair-share weight (operators set them).
struct Quota {
  std::string tenant_id;
  std::map<std::string, int> max_gpus_per_type;  // GPUs held at once, by type
  std::optional<int> max_instances;  // instances holding GPUs at once (job members count)
  int weight = 1;                    // share of contended capacity
  // Caps on what a tenant may ask for, refused at once when exceeded (unlike the limits above,
  // which make work wait): work waiting in the queue at once (instances, and each task of a job),
  // tasks in one job array, and the bytes of one request's body (the server's own limit applies
  // to all).
  std::optional<int> max_queued;
  std::optional<int> max_array;
  std::optional<int> max_body_bytes;
};

template <class V, schema::Of<Quota> S>
void fields(V& visit, S& x) {
  visit("max_array", x.max_array, schema::kOmitEmpty);
  visit("max_body_bytes", x.max_body_bytes, schema::kOmitEmpty);
  visit("max_gpus_per_type", x.max_gpus_per_type);
  visit("max_instances", x.max_instances);
  visit("max_queued", x.max_queued, schema::kOmitEmpty);
  visit("tenant_id", x.tenant_id);
  visit("weight", x.weight);
}

}  // namespace gpurent::model
