#include "controller/controller.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "controller/internal.h"
#include "model/codec.h"
#include "model/gpu_catalog.h"

namespace gpurent::controller {

namespace {

Error invalid_state(const Instance& instance, std::string_view action) {
  return Error::conflict("invalid_state",
                         fmt::format("cannot {} instance {} while it is {}", action, instance.id,
                                     model::to_string(instance.state)));
}

}  // namespace

Controller::Controller(const Clock& clock, ControllerOptions options)
    : clock_(clock),
      options_(std::move(options)),
      rng_(options_.seed),
      last_billing_(clock.now()) {}

// --- Instances ----------------------------------------------------------------------------------

Status Controller::check_caps(std::string_view tenant_id, int queuing, int array) const {
  const model::Quota* quota = accounts_.quotas().of(tenant_id);
  if (quota == nullptr) return {};
  if (quota->max_array && array > *quota->max_array) {
    return fail(Error::unprocessable(
        "quota_exceeded",
        fmt::format("the tenant's quota allows arrays of at most {} tasks", *quota->max_array)));
  }
  if (quota->max_queued && scheduler_.queued(tenant_id) + queuing > *quota->max_queued) {
    return fail(Error::conflict(
        "quota_exceeded",
        fmt::format("the tenant's quota allows {} instance(s) or job task(s) waiting at once, and "
                    "{} wait: try again once some have started",
                    *quota->max_queued, scheduler_.queued(tenant_id))));
  }
  return {};
}

Status Controller::check_funds(std::string_view tenant_id, const model::InstanceSpec& spec) const {
  const auto dearest = pricing_.dearest_type(spec);
  const auto type = model::requested_gpu_type(spec);
  if (!dearest) {
    return fail(Error::unprocessable("gpu_type_not_priced",
                                     fmt::format("GPU type '{}' has no price yet", type)));
  }
  if (accounts_.over_credit_limit(tenant_id)) {
    return fail(Error{ErrorKind::kPaymentRequired, "insufficient_funds",
                      "the balance is below the credit limit: top up to start work again"});
  }
  const Micros needed = charge_for_seconds(
      dearest->per_gpu_hour, int64_t{spec.gpu_count} * spec.gpu_milli, kMinimumPrepaidSeconds);
  // A credit limit lets the balance go that far below zero.
  const Micros balance =
      accounts_.cash(tenant_id) + accounts_.balance_settings(tenant_id).credit_limit;
  if (balance <= 0 || balance < needed) {
    return fail(Error{
        ErrorKind::kPaymentRequired, "insufficient_balance",
        fmt::format("the balance, {}, does not cover {} s of {} x {} ({} needed); top up first "
                    "(`gpurent balance`)",
                    format_money(balance, options_.currency), kMinimumPrepaidSeconds,
                    spec.gpu_count, type, format_money(needed, options_.currency))});
  }
  return {};
}

Status detail::validate_spec(const model::InstanceSpec& spec, int nodes) {
  for (const auto& type : spec.gpu_types) {
    if (!model::find_gpu_type(type)) {
      return fail(Error::unprocessable("unknown_gpu_type", model::unknown_gpu_type_message(type)));
    }
  }
  if (spec.gpu_count < 1 || spec.gpu_count > kMaxGpusPerInstance) {
    return fail(Error::invalid(
        "invalid_field",
        fmt::format("field 'gpu_count' must be between 1 and {}", kMaxGpusPerInstance)));
  }
  if (spec.vm && !spec.image.empty()) {
    return fail(Error::unprocessable(
        "vm_image_unsupported", "a VM runs a command in the node's guest image, not an image"));
  }
  if (spec.vm && spec.gpu_milli < model::kMilliPerGpu) {
    return fail(Error::unprocessable(
        "vm_gpu_share_unsupported",
        "a VM is given whole GPUs (passed through): drop gpu_milli, or run the share as a "
        "process or container"));
  }
  if (!spec.ssh_keys.empty() && !spec.vm) {
    return fail(Error::unprocessable(
        "ssh_keys_need_vm",
        "SSH keys are given to a VM's cloud-init user: pass them with runtime vm (a process or "
        "container is reached with `gpurent exec`)"));
  }
  if (spec.ssh_keys.size() > model::kMaxSshKeys) {
    return fail(
        Error::invalid("invalid_field",
                       fmt::format("field 'ssh_keys' takes at most {} keys", model::kMaxSshKeys)));
  }
  for (size_t i = 0; i < spec.ssh_keys.size(); ++i) {
    if (!model::valid_ssh_public_key(spec.ssh_keys[i])) {
      return fail(Error::invalid(
          "invalid_field",
          fmt::format("field 'ssh_keys[{}]' is not an OpenSSH public key line (\"ssh-ed25519 "
                      "AAAA... comment\", as in ~/.ssh/id_ed25519.pub)",
                      i)));
    }
  }
  GPURENT_CHECK(model::validate_volume_mounts(spec.volumes));
  if (nodes > 1 && !spec.volumes.empty()) {
    return fail(Error::invalid("invalid_field",
                               "volumes live on one node: a job that mounts them needs nodes = 1"));
  }
  auto request = scheduling_request(spec);
  request.nodes = nodes;
  return sched::validate(request);
}

Status Controller::check_placeable(const model::InstanceSpec& spec, int nodes) const {
  auto request = scheduling_request(spec);
  request.nodes = nodes;
  std::string conflict;  // none: Volumes::check_mounts passed
  request.node_id = volumes_.pinned_node(spec, &conflict);
  if (!spec.wait_for_capacity) {
    if (const auto never = placements_.cluster().why_never_fits(request)) {
      return fail(Error::unprocessable(
          "never_fits",
          fmt::format("no node of this cluster could ever hold it ({} rule): {}. To queue it "
                      "until such a node joins, pass --wait-for-capacity (API: "
                      "\"wait_for_capacity\": true); `gpurent offers` lists what there is",
                      never->constraint, never->message)));
    }
  }
  if (spec.queue) return {};
  // Fail fast: say which constraint failed rather than queueing.
  auto placed = placements_.cluster().place_or_explain(request);
  if (const auto* refusal = std::get_if<sched::Refusal>(&placed)) {
    return fail(Error::conflict(
        "insufficient_capacity",
        fmt::format("cannot be placed now ({} rule): {}; free GPUs of the requested type(s): "
                    "{}, at most {} on one node. Without --no-queue it would wait in the queue",
                    refusal->constraint, refusal->message, refusal->free_gpus,
                    refusal->largest_free_on_one_node)));
  }
  return {};
}

Result<CreatedInstance> Controller::create_instance(
    const Principal& caller, model::InstanceSpec spec,
    const std::optional<std::string>& idempotency_key, std::string fingerprint) {
  GPURENT_TRY(first, replayed_creation<CreatedInstance>(idempotency_, caller, idempotency_key,
                                                        fingerprint, instances_.all()));
  if (first) return std::move(*first);
  GPURENT_CHECK(validate_spec(spec, 1));
  GPURENT_CHECK(volumes_.resolve_names(caller, spec));
  GPURENT_CHECK(volumes_.check_mounts(caller.tenant_id, spec));
  GPURENT_CHECK(reservations_.check_use(caller, spec));
  GPURENT_CHECK(check_funds(caller.tenant_id, spec));
  GPURENT_CHECK(check_caps(caller.tenant_id, 1));
  GPURENT_CHECK(check_placeable(spec, 1));
  scheduler_.observe_request(spec, 1);
  Instance& created = instances_.add(caller.tenant_id, std::move(spec));
  scheduler_.enqueue(created);
  tracker_.touch(created);
  idempotency_.remember(caller.tenant_id, idempotency_key, std::move(fingerprint), created.id);
  const std::string id = created.id;
  schedule();
  return CreatedInstance{instances_.at(id), false};
}

Result<Instance*> Controller::owned_instance(const Principal& caller, std::string_view id) {
  GPURENT_TRY(found, instances_.get(caller, id));
  if (!found->job_id.empty()) {
    return fail(Error::conflict(
        "owned_by_job", fmt::format("instance {} runs a task of job {}; use the job's commands",
                                    found->id, found->job_id)));
  }
  return const_cast<Instance*>(found);
}

Result<Instance> Controller::stop_instance(const Principal& caller, std::string_view id) {
  GPURENT_TRY(instance, owned_instance(caller, id));
  switch (instance->state) {
    case InstanceState::kPending:
      withdraw(*instance, "stopped before it was placed");
      break;
    case InstanceState::kStarting:
    case InstanceState::kRunning:
      request_stop(*instance, "stopped by the tenant");
      break;
    case InstanceState::kStopping:
      // A stop by the tenant wins over a move or a preemption in progress, and over a start
      // asked for while it was stopping.
      instance->requeue_requested = instance->preempt_requested = false;
      instance->start_requested = false;
      instance->start_on_node.clear();
      tracker_.touch(*instance);
      break;
    case InstanceState::kStopped:
    case InstanceState::kFailed:
    case InstanceState::kPreempted:
      break;  // already on its way or there: stopping twice is not an error
    case InstanceState::kTerminated:
      return fail(invalid_state(*instance, "stop"));
  }
  return *instance;
}

Result<Instance> Controller::start_instance(const Principal& caller, std::string_view id,
                                            StartOn where) {
  GPURENT_TRY(instance, owned_instance(caller, id));
  // Its files are on the node of its last placement (none before its first).
  const auto start_on = [&] { return where == StartOn::kAnyNode ? "" : instance->node_id; };
  switch (instance->state) {
    case InstanceState::kStopped:
    case InstanceState::kFailed:
    case InstanceState::kPreempted:
      GPURENT_CHECK(check_funds(instance->tenant_id, instance->spec));
      GPURENT_CHECK(check_caps(instance->tenant_id, 1));
      instance->start_on_node = start_on();
      queue_again(*instance);
      schedule();
      break;
    case InstanceState::kPending:
      if (where == StartOn::kAnyNode && !instance->start_on_node.empty()) {
        instance->start_on_node.clear();
        instance->reason = "waiting for capacity";
        tracker_.touch(*instance);
        scheduler_.queue_changed();
        schedule();
      }
      break;
    case InstanceState::kStarting:
    case InstanceState::kRunning:
      break;  // already started
    case InstanceState::kStopping:
      // Started once its process is gone (end_run), unless it is going for good.
      if (instance->terminate_requested || !instance->job_id.empty()) {
        return fail(invalid_state(*instance, "start"));
      }
      GPURENT_CHECK(check_funds(instance->tenant_id, instance->spec));
      instance->start_requested = true;
      instance->start_on_node = start_on();
      tracker_.touch(*instance);
      break;
    case InstanceState::kTerminated:
      return fail(invalid_state(*instance, "start"));
  }
  return *instance;
}

void Controller::queue_again(Instance& instance) {
  metering_.close_stopped_disk(instance);
  instance.state = InstanceState::kPending;
  instance.reason = "waiting for capacity";
  instance.exit_code.reset();
  instance.queued_at = now();
  instance.queue_sequence = 0;  // a new arrival
  scheduler_.enqueue(instance);
  tracker_.touch(instance);
}

Result<Instance> Controller::delete_instance(const Principal& caller, std::string_view id) {
  GPURENT_TRY(instance, owned_instance(caller, id));
  switch (instance->state) {
    case InstanceState::kPending:
      scheduler_.dequeue(*instance);
      [[fallthrough]];
    case InstanceState::kStopped:
    case InstanceState::kFailed:
    case InstanceState::kPreempted:
      metering_.close_stopped_disk(*instance);
      instance->state = InstanceState::kTerminated;
      instance->reason = "removed by the tenant";
      instance->start_on_node.clear();
      tracker_.touch(*instance);
      // The node it last ran on deletes its files.
      if (const auto node = nodes_.find(instance->node_id); node != nodes_.end()) {
        tracker_.touch_node(node->second, /*desired_set_changed=*/true);
      }
      instances_.files_deleted(*instance);
      break;
    case InstanceState::kStarting:
    case InstanceState::kRunning:
      instance->terminate_requested = true;
      request_stop(*instance, "removed by the tenant");
      break;
    case InstanceState::kStopping:
      instance->terminate_requested = true;
      tracker_.touch(*instance);
      if (nodes_.at(instance->node_id).state == NodeState::kDown)
        end_run(*instance, std::nullopt, "");
      break;
    case InstanceState::kTerminated:
      break;
  }
  return *instance;
}

void Controller::withdraw(Instance& instance, std::string reason) {
  scheduler_.dequeue(instance);
  instance.state = InstanceState::kStopped;
  instance.start_on_node.clear();
  instance.reason = std::move(reason);
  tracker_.touch(instance);
}

void Controller::request_stop(Instance& instance, std::string reason) {
  instance.state = InstanceState::kStopping;
  placements_.stopping(instance);
  instance.reason = std::move(reason);
  tracker_.touch(instance);
  Node& node = nodes_.at(instance.node_id);
  tracker_.touch_node(node, /*desired_set_changed=*/true);
  // A down node cannot confirm the stop; its billing already ended at its last report, and if it
  // comes back its agent stops the workload because the desired set no longer holds it. Work on
  // a quarantined GPU ends at once too: billing ends at the report that carried the fault.
  if (node.state == NodeState::kDown || quarantines_.holds_quarantined(instance)) {
    end_run(instance, std::nullopt, "");
  }
}

// --- Placement and runs -------------------------------------------------------------------------

void Controller::restore_run_start(Instance& instance) {
  if (instance.started_at) return;
  const model::UsageRecord* usage = metering_.current(instance);
  if (!usage) return;
  instance.started_at = usage->started_at;
  if (instance.state == InstanceState::kStarting) instance.state = InstanceState::kRunning;
}

void Controller::begin_run(Instance& instance) {
  // The first report of the process opens its metering, also when a stop was asked for before
  // the process came up: it runs (and is billed) until the agent confirms it is gone.
  if (instance.started_at) return;
  // One instant for the instance and its usage record: a restore reads the one from the other.
  const Timestamp started = now();
  if (instance.state == InstanceState::kStarting) instance.state = InstanceState::kRunning;
  instance.started_at = started;
  downtime_.end(instance, started);
  if (instance.spec.max_runtime_s) {
    deadlines_.emplace(started + Millis(*instance.spec.max_runtime_s * 1000), instance.id);
    scheduler_.forget_settled_pass();  // its end is known now: the backfill estimates move
  }
  // Not written: the run's usage record, written below, says when it started, and restore
  // derives the start from it (restore_run_start); an array's start would otherwise write every
  // member a second time.
  tracker_.note_change(instance);
  if (!instance.job_id.empty()) jobs_.member_started(instance);
  metering_.open_run(instance, started);
  spdlog::debug("running instance={} run={}", instance.id, instance.run);
}

void Controller::end_run(Instance& instance, std::optional<int> exit_code, std::string reason,
                         RunEnd how) {
  Node& node = nodes_.at(instance.node_id);
  if (instance.state == InstanceState::kRunning || instance.state == InstanceState::kStopping) {
    // A run the platform cut short (its node or GPU failed, its agent lost it, it was
    // preempted or moved off a drained node) pays no minimum, nor one that never ran.
    const bool platform_ended = node.state != NodeState::kReady || how != RunEnd::kReported ||
                                instance.preempt_requested || instance.requeue_requested ||
                                quarantines_.holds_quarantined(instance);
    // Billing ends at the last moment the node is known to have been up.
    metering_.close_run(instance, node.state == NodeState::kReady ? now() : node.last_heartbeat,
                        platform_ended);
  }
  const bool asked_to_stop = instance.state == InstanceState::kStopping;
  if (instance.terminate_requested) {
    instance.state = InstanceState::kTerminated;
  } else if (asked_to_stop && instance.preempt_requested) {
    instance.state = InstanceState::kPreempted;
  } else if (asked_to_stop && instance.requeue_requested) {
    instance.state = InstanceState::kPending;
  } else if (asked_to_stop || exit_code == 0) {
    instance.state = InstanceState::kStopped;
  } else {
    instance.state = InstanceState::kFailed;
  }
  if (!asked_to_stop) instance.reason = std::move(reason);
  // Downtime lasts until the instance runs again, or is stopped for good.
  if (instance.state != InstanceState::kPending) downtime_.end(instance, now());
  instance.exit_code = exit_code;
  instance.ended_at = now();
  // The node's files of a terminated instance go, and a job member's once its run ended: its task
  // runs again as a new run, anywhere, and keeps what it makes in volumes. The node's desired set
  // changes below.
  if (instance.state == InstanceState::kTerminated || !instance.job_id.empty()) {
    instances_.files_deleted(instance);
  }
  if (placements_.remove(instance)) scheduler_.queue_changed();
  scheduler_.victim_ended(instance.id);
  if (instance.spec.max_runtime_s && instance.started_at) {
    deadlines_.erase(
        {*instance.started_at + Millis(*instance.spec.max_runtime_s * 1000), instance.id});
  }
  instance.preempt_requested = false;
  instance.gpus.clear();
  if (instance.state == InstanceState::kPending) {
    // Moved off a drained node: back in the queue, ahead of later arrivals of its class (a job
    // member waits for its task to settle: the task moves as a whole).
    instance.requeue_requested = false;
    // Said plainly: on a cluster with no other node, this waits until the node is uncordoned.
    instance.reason = fmt::format(
        "moving off drained node {}: waiting for capacity on another node (or for `gpurent "
        "nodes uncordon {}`)",
        node.id, node.id);
    if (instance.job_id.empty()) scheduler_.enqueue(instance);
  }
  metering_.open_stopped_disk(instance);
  tracker_.touch(instance);
  tracker_.touch_node(node, /*desired_set_changed=*/true);
  if (std::exchange(instance.start_requested, false) && instance.state == InstanceState::kStopped) {
    queue_again(instance);  // a start asked for while it was stopping
  } else {
    instance.start_on_node.clear();  // that start is void: the instance moves, or is gone
  }
  spdlog::debug("ended instance={} run={} state={} exit_code={}", instance.id, instance.run,
                model::to_string(instance.state), exit_code ? std::to_string(*exit_code) : "none");
  if (!instance.job_id.empty()) member_ended(instance);
}

}  // namespace gpurent::controller
