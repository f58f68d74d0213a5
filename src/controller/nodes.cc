// The controller's nodes and agents (registration, reports, cordon and drain)
// and its clock (silent nodes, failures, balances, the tick): controller.h has the contracts.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "controller/controller.h"
#include "controller/internal.h"
#include "model/codec.h"
#include "model/gpu_catalog.h"

namespace gpurent::controller {

// --- Nodes and agents ---------------------------------------------------------------------------

Result<model::RegistrationResult> Controller::register_node(std::string_view join_token_hash,
                                                            model::NodeRegistration registration,
                                                            std::string credential,
                                                            std::string credential_hash) {
  if (!accounts_.credentials().valid_join_token(join_token_hash)) {
    return fail(Error{ErrorKind::kUnauthenticated, "invalid_join_token",
                      "the join token is unknown or expired"});
  }
  if (registration.name.empty() || registration.name.size() > 253) {
    return fail(Error::invalid("invalid_field", "field 'name' must be 1..253 characters"));
  }
  if (registration.gpus.size() > static_cast<size_t>(sched::kMaxGpusPerNode)) {
    return fail(Error::invalid(
        "invalid_field", fmt::format("a node may have at most {} GPUs", sched::kMaxGpusPerNode)));
  }
  if (std::any_of(registration.gpus.begin(), registration.gpus.end(), [&](const model::Gpu& gpu) {
        return gpu.type != registration.gpus.front().type;
      })) {
    return fail(Error::invalid("mixed_gpu_types",
                               "all GPUs of a node must be of one type; run one agent per type"));
  }
  if (!registration.isolation.empty() && registration.isolation != "sandbox" &&
      registration.isolation != "none") {
    return fail(Error::invalid("invalid_field", "field 'isolation' must be 'sandbox' or 'none'"));
  }
  if (registration.labels.size() > 64 || registration.fabric_group.size() > 253 ||
      registration.disk_gb < 0 || registration.isolation_note.size() > 1024) {
    return fail(Error::invalid("invalid_field", "labels, fabric_group or disk_gb out of range"));
  }
  for (const auto& [key, value] : registration.labels) {
    if (key.starts_with(detail::kPlatformLabelPrefix)) {
      return fail(Error::invalid("invalid_field",
                                 fmt::format("label '{}': labels under {} are the platform's", key,
                                             detail::kPlatformLabelPrefix)));
    }
  }
  // The address becomes MASTER_ADDR in other tenants' jobs: a host name or IP address only.
  if (registration.address.size() > 253 ||
      !std::all_of(registration.address.begin(), registration.address.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':';
      })) {
    return fail(Error::invalid("invalid_field", "address must be a host name or IP address"));
  }
  std::set<std::string> uuids;
  for (const auto& gpu : registration.gpus) {
    if (gpu.uuid.empty() || gpu.uuid.size() > 128 || gpu.type.empty() ||
        !uuids.insert(gpu.uuid).second) {
      return fail(Error::invalid("invalid_field", "every GPU needs a unique uuid and a type"));
    }
  }
  // The nodes already holding any of these GPUs (an index: registering N nodes stays O(N)).
  std::set<std::string> owners;
  for (const auto& uuid : uuids) {
    if (const auto owner = nodes_.owner_of_gpu(uuid); !owner.empty()) owners.emplace(owner);
  }
  for (const auto& id : owners) {
    Node& known = nodes_.at(id);
    // The same host registering again (its answer was lost, or its identity file with it) gets
    // its node back under a new credential, as long as no work is placed there; anything else
    // claiming known GPUs is refused.
    const bool same_host =
        known.name == registration.name && known.gpus.size() == uuids.size() &&
        std::all_of(known.gpus.begin(), known.gpus.end(),
                    [&](const model::Gpu& gpu) { return uuids.contains(gpu.uuid); });
    if (!same_host || !placements_.on_node(id).empty()) {
      return fail(Error::conflict("gpu_already_registered",
                                  fmt::format("these GPUs already belong to node {}", id)));
    }
    nodes_.re_register(known, std::move(credential_hash));
    known.last_heartbeat = now();
    // Labels, fabric and disk may have changed with the agent's flags.
    known.disk_gb = registration.disk_gb;
    known.fabric_group = std::move(registration.fabric_group);
    known.labels = std::move(registration.labels);
    known.address = std::move(registration.address);
    known.container_runtime = registration.container_runtime;
    known.vm = std::move(registration.vm);
    known.isolation = std::move(registration.isolation);
    known.isolation_note = std::move(registration.isolation_note);
    known.answers_benchmarks = registration.benchmarks;
    known.registered_from = std::move(registration.registered_from);
    known.cpu_count = registration.cpu_count;
    known.memory_mb = registration.memory_mb;
    known.gpus = std::move(registration.gpus);
    tracker_.touch_node(known, /*desired_set_changed=*/false);
    sync_cluster_node(known);
    benchmark_new_gpus(known);
    spdlog::info("re-registered node={}", id);
    return model::RegistrationResult{id, std::move(credential)};
  }
  Node node;
  node.id = rng_.id("n-");
  node.name = std::move(registration.name);
  node.gpus = std::move(registration.gpus);
  node.cpu_count = registration.cpu_count;
  node.memory_mb = registration.memory_mb;
  node.disk_gb = registration.disk_gb;
  node.fabric_group = std::move(registration.fabric_group);
  node.labels = std::move(registration.labels);
  node.address = std::move(registration.address);
  node.simulated = registration.simulated;
  node.container_runtime = registration.container_runtime;
  node.vm = std::move(registration.vm);
  node.isolation = std::move(registration.isolation);
  node.isolation_note = std::move(registration.isolation_note);
  node.answers_benchmarks = registration.benchmarks;
  node.registered_from = std::move(registration.registered_from);
  node.agent_version = std::move(registration.agent_version);
  node.state = NodeState::kReady;
  node.registered_at = now();
  node.last_heartbeat = now();
  watch_silence(node);
  node.credential_hash = std::move(credential_hash);
  for (const auto& gpu : node.gpus) monitor_.series().set_owner(gpu.uuid, node.id);
  const std::string id = node.id;
  auto& registered = nodes_.add(std::move(node));
  tracker_.touch_node(registered, /*desired_set_changed=*/false);
  sync_cluster_node(registered);
  benchmark_new_gpus(registered);
  spdlog::info("registered node={} gpus={}", id, nodes_.at(id).gpus.size());
  schedule();
  return model::RegistrationResult{id, std::move(credential)};
}

Result<int64_t> Controller::apply_report(std::string_view node_id,
                                         const model::NodeReport& report) {
  const auto node_it = nodes_.find(node_id);
  if (node_it == nodes_.end()) return fail(Error::not_found("node", node_id));
  Node& node = node_it->second;
  node.last_heartbeat = now();
  quarantine_failed_gpus(node, report.telemetry);
  if (report.sent_at_ms) record_clock_skew(node, *report.sent_at_ms);
  record_telemetry(node, report.telemetry);
  if (report.container_runtime &&
      (*report.container_runtime != node.container_runtime ||
       report.container_toolkit != node.container_toolkit || report.vm != node.vm)) {
    // The agent restarted with (or without) a container engine or VMs, or found another NVIDIA
    // Container Toolkit: image or VM work may go there (or not) from now on; what runs there keeps
    // running.
    node.container_runtime = *report.container_runtime;
    node.container_toolkit = report.container_toolkit;
    node.vm = report.vm;
    tracker_.touch_node(node, /*desired_set_changed=*/false);
    sync_cluster_node(node);
    spdlog::info("node={} container_runtime={} container_toolkit=\"{}\" note=\"{}\" vm=\"{}\"",
                 node.id, node.container_runtime,
                 node.container_toolkit ? node.container_toolkit->version : "not checked",
                 node.container_toolkit ? node.container_toolkit->note : "",
                 node.vm ? fmt::format("{} gpu_passthrough={} {}", node.vm->accelerator,
                                       node.vm->gpu_passthrough, node.vm->note)
                         : "none");
  }
  if (node.state == NodeState::kDown) {
    node.state = NodeState::kReady;
    watch_silence(node);
    tracker_.touch_node(node, /*desired_set_changed=*/false);
    update_schedulable(node);
    events_.record("", node.id, model::event_kind::kNodeUp, "the node reports again");
    // The time it was unreachable is not billed.
    for (const auto& [id, instance] : placements_.on_node(node.id)) {
      downtime_.end(*instance, now());
      metering_.skip_silence(*instance, now());
    }
  }
  if (report.benchmark && node.benchmark && report.benchmark->request == node.benchmark->id) {
    take_benchmark(node, *report.benchmark);
  }
  std::map<std::pair<std::string_view, int64_t>, const model::WorkloadStatus*> reported;
  for (const auto& status : report.workloads) reported[{status.instance_id, status.run}] = &status;

  // Copy: end_run edits the set.
  const PlacedInstances assigned = placements_.on_node(node.id);
  for (const auto& [id, placed] : assigned) {
    Instance& instance = *placed;
    const auto it = reported.find({instance.id, instance.run});
    if (it == reported.end()) {
      if (report.applied_generation >= instance.placed_generation) {
        // Gone as asked, or lost.
        if (instance.state == InstanceState::kStopping) {
          end_run(instance, std::nullopt, "");
        } else {
          end_run(instance, std::nullopt, "the agent lost the workload", RunEnd::kLostByAgent);
        }
      }
      continue;
    }
    const model::WorkloadStatus& status = *it->second;
    switch (status.phase) {
      case model::WorkloadPhase::kStarting:
        break;
      case model::WorkloadPhase::kRunning:
        begin_run(instance);
        break;
      case model::WorkloadPhase::kExited:
        begin_run(instance);
        if (status.never_started) {
          end_run(instance, status.exit_code,
                  fmt::format("the command could not be started: {}", status.message),
                  RunEnd::kNeverStarted);
          break;
        }
        end_run(instance, status.exit_code,
                status.exit_code == 0
                    ? "the command exited"
                    : fmt::format("the command exited with code {}{}",
                                  status.exit_code ? std::to_string(*status.exit_code) : "?",
                                  status.message.empty() ? "" : ": " + status.message));
        break;
    }
  }
  schedule();
  return node.generation;
}

Result<int> Controller::manage_node(const Principal& caller, std::string_view id,
                                    NodeAction action) {
  GPURENT_TRY(node, set_cordoned(caller, id, action != NodeAction::kUncordon));
  if (action != NodeAction::kDrain) return 0;
  const int moving = move_work_off(*node);
  schedule();
  return moving;
}

Result<Node*> Controller::set_cordoned(const Principal& caller, std::string_view id,
                                       bool cordoned) {
  if (!caller.is_operator()) return fail(forbidden("cordon nodes"));
  const auto it = nodes_.find(id);
  if (it == nodes_.end()) return fail(Error::not_found("node", id));
  Node& node = it->second;
  if (node.cordoned != cordoned) {
    node.cordoned = cordoned;
    tracker_.touch_node(node, /*desired_set_changed=*/false);
    update_schedulable(node);
    spdlog::info("node={} {}", node.id, cordoned ? "cordoned" : "uncordoned");
    if (!cordoned) schedule();
  }
  return &node;
}

int Controller::move_work_off(const Node& node) {
  int moving = 0;
  const PlacedInstances on_node = placements_.on_node(node.id);  // request_stop may edit it
  for (const auto& [instance_id, placed] : on_node) {
    Instance& instance = *placed;
    if (instance.state != InstanceState::kStarting && instance.state != InstanceState::kRunning) {
      continue;
    }
    instance.requeue_requested = true;
    request_stop(instance, "moving: its node is being drained");
    events_.record(instance.tenant_id, instance.id, model::event_kind::kInstanceMoved,
                   fmt::format("moving off node {}: the node is being drained", node.id));
    ++moving;
  }
  return moving;
}

// --- Time ---------------------------------------------------------------------------------------

void Controller::mark_node_down(Node& node) {
  node.state = NodeState::kDown;
  tracker_.touch_node(node, /*desired_set_changed=*/false);
  update_schedulable(node);
  events_.record("", node.id, model::event_kind::kNodeDown,
                 fmt::format("no report since {}", format_rfc3339(node.last_heartbeat)));
  const PlacedInstances on_node = placements_.on_node(node.id);  // end_run edits it
  for (const auto& [id, placed] : on_node) {
    Instance& instance = *placed;
    if (instance.state == InstanceState::kRunning || instance.state == InstanceState::kStopping) {
      metering_.meter(instance, node.last_heartbeat);
    }
    if (instance.state == InstanceState::kRunning) {
      downtime_.start(instance, node.last_heartbeat, "node_down");
    }
  }
  move_off_failure({node, "", fmt::format("node {} stopped reporting", node.name)}, on_node);
}

void Controller::move_off_failure(const Failure& failure, const PlacedInstances& affected) {
  const Node& node = failure.node;
  const auto hit = [&](const Instance& instance) {
    return instance.node_id == node.id &&
           (failure.gpu_uuid.empty() || std::find(instance.gpus.begin(), instance.gpus.end(),
                                                  failure.gpu_uuid) != instance.gpus.end());
  };
  const std::string why = fmt::format("moving: {}", failure.what);
  for (const auto& [id, affected_instance] : affected) {
    Instance& instance = *affected_instance;
    if (!hit(instance)) continue;  // a sibling's move below already took it
    if (instance.state == InstanceState::kStopping) {
      // It was asked to stop and cannot confirm: it ends now (billing ended at the last report),
      // and if the node comes back its agent stops what is no longer desired.
      end_run(instance, std::nullopt, "");
      continue;
    }
    if (instance.state != InstanceState::kStarting && instance.state != InstanceState::kRunning) {
      continue;
    }
    if (instance.spec.restart_policy == model::RestartPolicy::kNever) {
      // A down node may come back with the work still running: it waits. A quarantined GPU stays
      // out of service until an operator checks it: the work on it is stopped, not restarted.
      if (!failure.gpu_uuid.empty())
        request_stop(instance, fmt::format("stopped: {}", failure.what));
      continue;
    }
    // A gang without one of its ranks cannot go on: the whole task moves.
    std::vector<Instance*> moving{&instance};
    if (model::Job* job = jobs_.of(instance)) {
      moving.clear();
      for (const auto& member_id : job->tasks.at(static_cast<size_t>(instance.job_task)).members) {
        Instance& member = instances_.at(member_id);
        if (member.state == InstanceState::kStarting || member.state == InstanceState::kRunning) {
          moving.push_back(&member);
        }
      }
    }
    for (Instance* member : moving) {
      events_.record(member->tenant_id, member->id, model::event_kind::kInstanceMoved,
                     hit(*member)
                         ? fmt::format("{}; placing it again elsewhere", failure.what)
                         : fmt::format("its task's gang lost a member ({}); the task moves as a "
                                       "whole",
                                       failure.what));
      member->requeue_requested = true;
      // On the failed node or GPU this ends the run at once; elsewhere, once its agent confirms.
      request_stop(*member, why);
    }
  }
}

void Controller::enforce_balances() {
  const std::set<std::string> overdrawn = accounts_.guard_balances();
  if (overdrawn.empty()) return;
  for (auto& [id, instance] : instances_.all()) {
    if (!overdrawn.contains(instance.tenant_id)) continue;
    if (instance.state == InstanceState::kStarting || instance.state == InstanceState::kRunning) {
      request_stop(instance, "stopped: the balance is exhausted");
      events_.record(instance.tenant_id, instance.id, model::event_kind::kInstanceStoppedForBalance,
                     "stopped: the balance is exhausted (the disk is kept)");
    } else if (instance.state == InstanceState::kPending) {
      withdraw(instance, "stopped: the balance is exhausted");
    }
  }
}

void Controller::watch_silence(const Node& node) {
  silence_deadline_ = std::min(silence_deadline_, node.last_heartbeat + options_.heartbeat_timeout);
}

void Controller::tick() {
  const Timestamp t = now();
  if (t > silence_deadline_) {
    silence_deadline_ = Timestamp::max();
    for (Node* node : nodes_.in_order()) {
      if (node->state != NodeState::kReady) continue;
      const Timestamp silent_since = std::max(node->last_heartbeat, fleet_.silence_counted_from());
      if (t - silent_since > options_.heartbeat_timeout) {
        mark_node_down(*node);
      } else {
        silence_deadline_ = std::min(silence_deadline_, silent_since + options_.heartbeat_timeout);
      }
    }
  }
  const bool spot_moved = update_spot_market();
  if (spot_moved) interrupt_spot_over_max_price();
  const bool metered = t - last_billing_ >= options_.billing_interval;
  if (metered) {
    last_billing_ = t;
    metering_.meter_all(t);
    volumes_.meter(t);
    accounts_.packages().expire();
    reservations_.settle_all();
    metering_.settle_sla_credits();
    enforce_balances();
  }
  advance_reservations();
  benchmark_tick();
  scheduler_.time_passed(spot_moved, metered);
  while (!deadlines_.empty() && deadlines_.begin()->first <= t) {
    const auto [deadline, id] = *deadlines_.begin();
    deadlines_.erase(deadlines_.begin());
    Instance& instance = instances_.at(id);
    if (instance.state == InstanceState::kRunning) {
      request_stop(instance,
                   fmt::format("reached its max_runtime_s of {} s", *instance.spec.max_runtime_s));
    }
  }
  schedule();
  if (options_.monitoring) monitor_tick();
}

void Controller::monitor_tick() {
  const auto auto_stops = monitor_.tick(
      [this](std::vector<monitor::ObservationRef>& out,
             const std::vector<monitor::Metric>& watched) { fleet_.observe(out, watched); });
  for (const auto& transition : auto_stops) {
    const auto it = instances_.all().find(transition.subject.subject);
    if (it == instances_.all().end() || !it->second.job_id.empty()) continue;
    model::Instance& instance = it->second;
    if (instance.state == InstanceState::kRunning || instance.state == InstanceState::kStarting) {
      request_stop(instance, fmt::format("stopped while idle (alert rule {})", transition.rule));
    }
  }
}

}  // namespace gpurent::controller
