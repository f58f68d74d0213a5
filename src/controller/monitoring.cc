// The controller's monitoring (monitoring.h): telemetry ingestion and queries, alert rules and
// their evaluation, what /metrics reads.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "controller/controller.h"
#include "controller/internal.h"

namespace gpurent::controller {

using detail::forbidden;
using detail::visible_to;
using model::InstanceState;
using model::NodeState;
using model::Principal;
using monitor::AlertState;
using monitor::Observation;
using monitor::ObservationRef;
using monitor::SignalKind;

namespace {

int64_t unix_ms(Timestamp t) { return to_unix_ms(t); }

// The alert concerns a tenant (its instance idles) rather than the platform.
bool tenant_alert(const Observation& subject) {
  return subject.signal.kind == SignalKind::kInstanceGpuUtil && !subject.tenant.empty();
}

bool visible_alert(const Principal& caller, const Observation& subject) {
  return caller.is_operator() || (tenant_alert(subject) && subject.tenant == caller.tenant_id);
}

// Built-in, then the config file's, then the API's.
std::vector<monitor::Rule> rules_in_force(const MonitoringState& state,
                                          const ControllerOptions& options) {
  monitor::BuiltinLimits limits;
  limits.heartbeat_timeout_s = static_cast<double>(options.heartbeat_timeout.count()) / 1000.0;
  limits.clock_skew_ms = static_cast<double>(options.clock_skew_limit.count());
  auto rules = monitor::builtin_rules(limits);
  rules.insert(rules.end(), state.config_rules.begin(), state.config_rules.end());
  for (const auto& [name, rule] : state.api_rules) rules.push_back(rule);
  return rules;
}

std::string describe(const monitor::Transition& t) {
  const std::string value = t.subject.value ? fmt::format("{:g}", *t.subject.value) : "missing";
  return fmt::format("alert {} ({}) {} on {}: {} = {}", t.rule, monitor::to_string(t.severity),
                     monitor::to_string(t.to), t.subject.subject,
                     monitor::signal_name(t.subject.signal), value);
}

}  // namespace

void MonitoringChanges::merge(MonitoringChanges&& other) {
  const auto append = [](auto& to, auto& from) {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  };
  append(rollups, other.rollups);
  append(rule_changes, other.rule_changes);
  append(alert_history, other.alert_history);
  append(acknowledged, other.acknowledged);
  if (other.prune) prune = other.prune;
}

Status Controller::restore_monitoring(MonitoringSnapshot& snapshot) {
  const auto loaded = monitoring_.series.write([&](monitor::SeriesStore& series) {
    return series.load_rollups(snapshot.rollups, unix_ms(now()));
  });
  spdlog::info("monitoring: {} rollup rows loaded, {} expired, {} refused; {} alert rules",
               loaded.loaded, loaded.expired, loaded.refused, snapshot.alert_rules.size());
  for (auto& rule : snapshot.alert_rules) {
    std::string name = rule.name;
    monitoring_.api_rules.insert_or_assign(std::move(name), std::move(rule));
  }
  for (auto& record : snapshot.alert_history) {
    monitoring_.last_history_seq = std::max(monitoring_.last_history_seq, record.seq);
    monitoring_.history.push_back(std::move(record));
  }
  while (monitoring_.history.size() > kMaxAlertHistory) monitoring_.history.pop_front();
  // The alerts whose latest record is active and acknowledged (monitoring.h).
  std::map<std::pair<std::string_view, std::string_view>, const AlertRecord*> latest;
  for (const auto& record : monitoring_.history) {
    latest[{record.transition.rule, record.transition.subject.subject}] = &record;
  }
  for (const auto& [key, record] : latest) {
    const AlertState to = record->transition.to;
    if (record->ack && (to == AlertState::kPending || to == AlertState::kFiring)) {
      monitoring_.restored_acks.push_back(
          {std::string(key.first), std::string(key.second), *record->ack});
    }
  }
  monitoring_.restored_acks_until = now() + kRestoredAckWindow;
  monitoring_.rules_changed = true;
  return {};
}

Status Controller::ingest_gpu_samples(std::string_view node_id, std::span<const GpuSamples> gpus) {
  if (!nodes_.contains(node_id)) return fail(Error::not_found("node", node_id));
  monitoring_.series.ingest(node_id, gpus);
  collect_rollups();
  return {};
}

void Controller::collect_rollups() {
  if (options_.series_fed_by_host) return;  // the host persists them (store::RollupWriter)
  auto rows = monitoring_.series.take_rollups(kMaxRollupRowsPerCommit);
  auto& to = changes_.monitoring_changes.rollups;
  to.insert(to.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
}

void Controller::monitor_tick() {
  const Timestamp t = now();
  if (t - monitoring_.last_compaction >= kCompactionInterval) {
    monitoring_.last_compaction = t;
    monitoring_.series.write([&](monitor::SeriesStore& series) { series.compact(unix_ms(t)); });
    const monitor::StoreOptions retention;
    changes_.monitoring_changes.prune =
        RollupPrune{.minute_before_ms = unix_ms(t) - retention.minute_retention_ms,
                    .hour_before_ms = unix_ms(t) - retention.hour_retention_ms};
  }
  // Every tick: the rows the telemetry thread's samples completed reach the store in slices.
  collect_rollups();
  if (t - monitoring_.last_evaluation < kAlertEvaluationInterval) return;
  monitoring_.last_evaluation = t;
  if (monitoring_.rules_changed) rebuild_alert_rules();
  observe(monitoring_.observed);
  for (const auto& transition : monitoring_.evaluator.evaluate(unix_ms(t), monitoring_.observed)) {
    apply_transition(transition);
  }
  reapply_restored_acks();
}

void Controller::reapply_restored_acks() {
  auto& waiting = monitoring_.restored_acks;
  if (waiting.empty()) return;
  if (now() > monitoring_.restored_acks_until) {
    spdlog::info("monitoring: {} acknowledgements dropped: their alerts did not come back",
                 waiting.size());
    waiting.clear();
    return;
  }
  std::erase_if(waiting, [&](const MonitoringState::RestoredAck& restored) {
    // Fails (alert_not_found) while the alert is not active yet.
    if (!monitoring_.evaluator.acknowledge(restored.rule, restored.subject, restored.ack.by,
                                           restored.ack.at_ms)) {
      return false;
    }
    record_acknowledgement(restored.rule, restored.subject, restored.ack);
    return true;
  });
}

void Controller::record_acknowledgement(std::string_view rule, std::string_view subject,
                                        const AlertAck& ack) {
  for (auto it = monitoring_.history.rbegin(); it != monitoring_.history.rend(); ++it) {
    if (it->transition.rule != rule || it->transition.subject.subject != subject) continue;
    if (it->ack) return;  // the first acknowledgement stays
    it->ack = ack;
    changes_.monitoring_changes.acknowledged.push_back(*it);
    return;
  }
}

void Controller::rebuild_alert_rules() {
  // Names are checked where rules come in, so this cannot fail; if it did, the old rules stay.
  if (auto set = monitoring_.evaluator.set_rules(rules_in_force(monitoring_, options_)); !set) {
    spdlog::error("alert rules not applied: {}", set.error().message);
  }
  monitoring_.rules_changed = false;
}

void Controller::observe(std::vector<monitor::ObservationRef>& out) const {
  out.clear();
  const Timestamp t = now();
  const int64_t now_ms = unix_ms(t);
  const auto fresh = [&](const std::optional<monitor::Sample>& sample) -> std::optional<double> {
    if (!sample || sample->t_ms < now_ms - kSampleMaxAgeMs) return std::nullopt;
    return sample->value;
  };
  // Only the metrics some rule watches are observed.
  std::vector<monitor::Metric> watched;
  for (const auto& rule : monitoring_.evaluator.rules()) {
    if (rule.signal.kind == SignalKind::kGpuMetric &&
        std::find(watched.begin(), watched.end(), rule.signal.metric) == watched.end()) {
      watched.push_back(rule.signal.metric);
    }
  }
  std::sort(watched.begin(), watched.end());
  const double timeout_s = static_cast<double>(options_.heartbeat_timeout.count()) / 1000.0;
  // The holders of the node's GPUs (by the GPU's position in node.gpus), in instance id order;
  // and each holder's sum and count of its GPUs' fresh utilisation, for all nodes.
  std::vector<std::pair<size_t, const model::Instance*>> holders;
  struct Utilisation {
    const model::Instance* instance;
    std::string_view gpu_type;
    double sum = 0;
    int count = 0;
  };
  std::vector<Utilisation> utilisation;
  // One lock for the whole pass: the telemetry thread waits for it, not the other way round.
  monitoring_.series.read([&](const monitor::SeriesStore& series) {
    for (const auto& [id, node] : nodes_) {
      const bool down = node.state == NodeState::kDown;
      double age_s = static_cast<double>((t - node.last_heartbeat).count()) / 1000.0;
      if (!down) age_s = std::min(age_s, timeout_s);
      out.push_back(
          {.signal = {SignalKind::kNodeHeartbeatAge}, .subject = id, .node = id, .value = age_s});
      if (const auto skew = node_clock_skew_ms(id); skew && !down) {
        out.push_back({.signal = {SignalKind::kNodeClockSkew},
                       .subject = id,
                       .node = id,
                       .value = static_cast<double>(std::abs(*skew))});
      }
      // Lookups per node, not per GPU: a node's instances, then its GPUs' latest samples.
      holders.clear();
      const size_t first_holder = utilisation.size();
      if (const auto on_node = instances_on_node_.find(id); on_node != instances_on_node_.end()) {
        for (const auto& instance_id : on_node->second) {
          const model::Instance& instance = instances_.find(instance_id)->second;
          const size_t its_first = holders.size();
          for (const auto& uuid : instance.gpus) {
            for (size_t g = 0; g < node.gpus.size(); ++g) {
              if (node.gpus[g].uuid != uuid) continue;
              holders.emplace_back(g, &instance);
              break;
            }
          }
          // The instance's GPU type: its first GPU's.
          const std::string_view gpu_type =
              holders.size() > its_first
                  ? std::string_view(node.gpus[holders[its_first].first].type)
                  : std::string_view();
          utilisation.push_back({&instance, gpu_type});
        }
      }
      const auto reported = series.latest_of_node(id);
      for (size_t g = 0; g < node.gpus.size(); ++g) {
        const model::Gpu& gpu = node.gpus[g];
        // Usually at the same position; a GPU known only from rollups restored at start has no
        // node in the series store yet, and is found by its uuid.
        const monitor::SeriesStore::GpuLatest* latest =
            g < reported.size() && reported[g]->uuid == gpu.uuid ? reported[g] : nullptr;
        for (size_t r = 0; !latest && r < reported.size(); ++r) {
          if (reported[r]->uuid == gpu.uuid) latest = reported[r];
        }
        if (!latest) latest = series.latest(gpu.uuid);
        if (!latest) continue;  // it never reported
        const model::Instance* first_holder_of_gpu = nullptr;
        // Each holder's utilisation is the mean of its GPUs' fresh values (a shared GPU counts for
        // every instance on it; a down node's last values too, while fresh); instances without
        // telemetry are neither idle nor busy.
        const auto util = fresh(latest->of(monitor::Metric::kGpuUtil));
        for (const auto& [held_gpu, instance] : holders) {
          if (held_gpu != g) continue;
          if (!first_holder_of_gpu) first_holder_of_gpu = instance;
          if (!util) continue;
          for (size_t u = first_holder; u < utilisation.size(); ++u) {
            if (utilisation[u].instance != instance) continue;
            utilisation[u].sum += *util;
            ++utilisation[u].count;
          }
        }
        // A GPU is not observed while its node is down.
        if (down) continue;
        std::string_view instance;
        std::string_view tenant;
        if (first_holder_of_gpu) {
          instance = first_holder_of_gpu->id;
          tenant = first_holder_of_gpu->tenant_id;
        }
        for (const monitor::Metric metric : watched) {
          out.push_back({.signal = {SignalKind::kGpuMetric, metric},
                         .subject = gpu.uuid,
                         .node = id,
                         .gpu_type = gpu.type,
                         .instance = instance,
                         .tenant = tenant,
                         .value = fresh(latest->of(metric))});
        }
      }
    }
  });
  // Then the running instances whose GPUs reported, by instance id (the order observations have
  // always come in).
  std::erase_if(utilisation, [](const Utilisation& u) {
    return u.count == 0 || u.instance->state != InstanceState::kRunning || u.instance->gpus.empty();
  });
  std::sort(utilisation.begin(), utilisation.end(), [](const Utilisation& a, const Utilisation& b) {
    return a.instance->id < b.instance->id;
  });
  for (const Utilisation& u : utilisation) {
    out.push_back({.signal = {SignalKind::kInstanceGpuUtil},
                   .subject = u.instance->id,
                   .node = u.instance->node_id,
                   .gpu_type = u.gpu_type,
                   .instance = u.instance->id,
                   .tenant = u.instance->tenant_id,
                   .value = u.sum / u.count});
  }
}

void Controller::apply_transition(const monitor::Transition& transition) {
  AlertRecord record{.seq = ++monitoring_.last_history_seq, .transition = transition};
  if (transition.from == AlertState::kPending && transition.to == AlertState::kFiring) {
    // An alert acknowledged while pending stays acknowledged as it fires (monitor/alerts.h).
    for (auto it = monitoring_.history.rbegin(); it != monitoring_.history.rend(); ++it) {
      if (it->transition.rule != transition.rule ||
          it->transition.subject.subject != transition.subject.subject) {
        continue;
      }
      record.ack = it->ack;
      break;
    }
  }
  monitoring_.history.push_back(record);
  if (monitoring_.history.size() > kMaxAlertHistory) monitoring_.history.pop_front();
  changes_.monitoring_changes.alert_history.push_back(std::move(record));

  const bool fired = transition.to == AlertState::kFiring;
  const bool resolved = transition.from == AlertState::kFiring;
  if (!fired && !resolved) return;  // pending, or pending that cleared: no one is told
  const std::string tenant = tenant_alert(transition.subject) ? transition.subject.tenant : "";
  events_.record(tenant, transition.subject.subject, fired ? "alert.firing" : "alert.resolved",
                 describe(transition));
  if (!fired || !transition.auto_stop) return;
  const auto it = instances_.find(transition.subject.subject);
  if (it == instances_.end() || !it->second.job_id.empty()) return;
  model::Instance& instance = it->second;
  if (instance.state == InstanceState::kRunning || instance.state == InstanceState::kStarting) {
    request_stop(instance, fmt::format("stopped while idle (alert rule {})", transition.rule));
  }
}

Status Controller::set_config_alert_rules(std::vector<monitor::Rule> rules) {
  std::vector<monitor::Rule> all = monitor::builtin_rules();
  all.insert(all.end(), rules.begin(), rules.end());
  GPURENT_CHECK(monitor::validate_rules(all));
  for (const auto& rule : rules) {
    if (monitoring_.api_rules.contains(rule.name)) {
      return fail(Error::invalid("duplicate_rule_name",
                                 fmt::format("rule '{}' is also set through the API", rule.name)));
    }
  }
  monitoring_.config_rules = std::move(rules);
  monitoring_.rules_changed = true;
  return {};
}

Result<MetricsAnswer> Controller::query_metrics(const Principal& caller,
                                                const MetricsQuery& query) const {
  MetricsAnswer answer;
  if (query.gpu) {
    bool visible =
        caller.is_operator() && (node_by_gpu_.contains(*query.gpu) ||
                                 monitoring_.series.read([&](const monitor::SeriesStore& series) {
                                   return !series.node_of(*query.gpu).empty();
                                 }));
    if (const auto held = gpu_holders_.find(*query.gpu); !visible && held != gpu_holders_.end()) {
      visible = std::any_of(held->second.begin(), held->second.end(), [&](const auto& id) {
        return instances_.at(id).tenant_id == caller.tenant_id;
      });
    }
    if (!visible) return fail(Error::not_found("gpu", *query.gpu));
    answer.gpus.push_back(*query.gpu);
  } else if (query.node) {
    const auto node = nodes_.find(*query.node);
    if (!caller.is_operator() || node == nodes_.end()) {
      return fail(Error::not_found("node", *query.node));
    }
    for (const auto& gpu : node->second.gpus) answer.gpus.push_back(gpu.uuid);
  } else if (query.instance) {
    const auto it = instances_.find(*query.instance);
    if (it == instances_.end() || !visible_to(caller, it->second.tenant_id)) {
      return fail(Error::not_found("instance", *query.instance));
    }
    answer.gpus = it->second.gpus;
  } else {
    return fail(Error::invalid("missing_subject", "give one of gpu, node or instance"));
  }
  const int64_t to_ms = query.to_ms.value_or(unix_ms(now()));
  const monitor::Query series_query{.metric = query.metric,
                                    .gpus = answer.gpus,
                                    .from_ms = query.from_ms.value_or(to_ms - monitor::kHourMs),
                                    .to_ms = to_ms,
                                    .step_ms = query.step_ms,
                                    .aggregation = query.aggregation,
                                    .resolution = query.resolution};
  GPURENT_TRY(result, monitoring_.series.read([&](const monitor::SeriesStore& series) {
    return series.query(series_query, unix_ms(now()));
  }));
  answer.result = std::move(result);
  return answer;
}

Result<std::vector<monitor::Rule>> Controller::alert_rules(const Principal& caller) const {
  if (!caller.is_operator()) return fail(forbidden("list alert rules"));
  return rules_in_force(monitoring_, options_);
}

namespace {

bool fixed_rule(const std::vector<monitor::Rule>& config, std::string_view name) {
  const auto named = [&](const monitor::Rule& rule) { return rule.name == name; };
  const auto builtin = monitor::builtin_rules();
  return std::any_of(builtin.begin(), builtin.end(), named) ||
         std::any_of(config.begin(), config.end(), named);
}

}  // namespace

Result<monitor::Rule> Controller::put_alert_rule(const Principal& caller, monitor::Rule rule) {
  if (!caller.is_operator()) return fail(forbidden("set alert rules"));
  GPURENT_CHECK(monitor::validate(rule));
  if (fixed_rule(monitoring_.config_rules, rule.name)) {
    return fail(
        Error::conflict("rule_not_editable",
                        fmt::format("rule '{}' is built in or set in the config file", rule.name)));
  }
  if (!monitoring_.api_rules.contains(rule.name) &&
      monitoring_.api_rules.size() >= kMaxApiAlertRules) {
    return fail(Error::conflict("too_many_rules",
                                fmt::format("at most {} rules may be set", kMaxApiAlertRules)));
  }
  monitoring_.api_rules.insert_or_assign(rule.name, rule);
  changes_.monitoring_changes.rule_changes.push_back({rule.name, rule});
  monitoring_.rules_changed = true;
  return rule;
}

Status Controller::delete_alert_rule(const Principal& caller, std::string_view name) {
  if (!caller.is_operator()) return fail(forbidden("delete alert rules"));
  if (fixed_rule(monitoring_.config_rules, name)) {
    return fail(Error::conflict(
        "rule_not_editable", fmt::format("rule '{}' is built in or set in the config file", name)));
  }
  const auto it = monitoring_.api_rules.find(name);
  if (it == monitoring_.api_rules.end()) return fail(Error::not_found("alert rule", name));
  monitoring_.api_rules.erase(it);
  changes_.monitoring_changes.rule_changes.push_back({std::string(name), std::nullopt});
  monitoring_.rules_changed = true;
  return {};
}

Result<monitor::Rule> Controller::set_idle_alert(const Principal& caller,
                                                 std::string_view instance_id, double below_percent,
                                                 int64_t for_ms, bool auto_stop) {
  const auto it = instances_.find(instance_id);
  if (it == instances_.end() || !visible_to(caller, it->second.tenant_id)) {
    return fail(Error::not_found("instance", instance_id));
  }
  monitor::Rule rule = monitor::idle_rule(instance_id, below_percent, for_ms, auto_stop);
  GPURENT_CHECK(monitor::validate(rule));
  // Set on the platform's behalf: a tenant may not set other rules.
  return put_alert_rule(model::platform_principal(), std::move(rule));
}

std::string Controller::alert_id(std::string_view rule, std::string_view subject) {
  return fmt::format("{}:{}", rule, subject);
}

AlertList Controller::alerts(const Principal& caller, size_t history_limit) const {
  AlertList list;
  for (auto& alert : monitoring_.evaluator.active()) {
    if (visible_alert(caller, alert.subject)) list.active.push_back(std::move(alert));
  }
  for (auto it = monitoring_.history.rbegin();
       it != monitoring_.history.rend() && list.history.size() < history_limit; ++it) {
    if (visible_alert(caller, it->transition.subject)) list.history.push_back(&*it);
  }
  std::reverse(list.history.begin(), list.history.end());
  return list;
}

Status Controller::acknowledge_alert(const Principal& caller, std::string_view id) {
  // Rule names hold no ':', so the first one ends the rule.
  const size_t colon = id.find(':');
  const auto not_found = [&] {
    return fail(Error{ErrorKind::kNotFound, "alert_not_found",
                      fmt::format("no pending or firing alert {}", id)});
  };
  if (colon == std::string_view::npos) return not_found();
  const std::string_view rule = id.substr(0, colon);
  const std::string_view subject = id.substr(colon + 1);
  for (const auto& alert : monitoring_.evaluator.active()) {
    if (alert.rule != rule || alert.subject.subject != subject) continue;
    if (!visible_alert(caller, alert.subject)) break;
    GPURENT_CHECK(monitoring_.evaluator.acknowledge(rule, subject, caller.key_id, unix_ms(now())));
    record_acknowledgement(rule, subject, {.by = caller.key_id, .at_ms = unix_ms(now())});
    events_.record(
        tenant_alert(alert.subject) ? alert.subject.tenant : "", subject, "alert.acknowledged",
        fmt::format("alert {} on {} acknowledged by key {}", rule, subject, caller.key_id));
    return {};
  }
  return not_found();
}

std::vector<monitor::GpuReading> Controller::gpu_readings() const {
  const int64_t now_ms = unix_ms(now());
  std::vector<monitor::GpuReading> readings;
  monitoring_.series.read([&](const monitor::SeriesStore& series) {
    for (const auto& [id, node] : nodes_) {
      for (const auto& gpu : node.gpus) {
        monitor::GpuInfo info{
            .uuid = gpu.uuid, .index = gpu.index, .hostname = node.name, .model_name = gpu.name};
        if (const auto held = gpu_holders_.find(gpu.uuid);
            held != gpu_holders_.end() && !held->second.empty()) {
          info.instance_id = *held->second.begin();
          info.tenant = instances_.at(info.instance_id).tenant_id;
        }
        auto reading = monitor::latest_reading(series, std::move(info), now_ms, kSampleMaxAgeMs);
        if (!reading.values.empty()) readings.push_back(std::move(reading));
      }
    }
  });
  return readings;
}

PlatformStats Controller::platform_stats() const {
  PlatformStats stats;
  for (const char* status : {"ready", "degraded", "draining", "cordoned", "down"}) {
    stats.nodes_by_status[status] = 0;
  }
  for (const auto& [id, node] : nodes_) ++stats.nodes_by_status[std::string(node_status(node))];
  for (const auto state :
       {InstanceState::kPending, InstanceState::kStarting, InstanceState::kRunning,
        InstanceState::kStopping, InstanceState::kStopped, InstanceState::kFailed,
        InstanceState::kPreempted, InstanceState::kTerminated}) {
    stats.instances_by_state[std::string(model::to_string(state))] = 0;
  }
  for (const auto& [id, instance] : instances_) {
    ++stats.instances_by_state[std::string(model::to_string(instance.state))];
  }
  stats.queue_length = static_cast<int>(pending_.size());
  for (const auto& [id, skew] : node_clock_skew_ms_) {
    const auto node = nodes_.find(id);
    if (node == nodes_.end()) continue;
    stats.clock_skews.push_back({.node_id = id,
                                 .node_name = node->second.name,
                                 .seconds = static_cast<double>(skew) / 1000});
  }
  std::ranges::sort(stats.clock_skews, {}, &NodeClockSkew::node_id);
  for (const auto severity :
       {monitor::Severity::kInfo, monitor::Severity::kWarning, monitor::Severity::kCritical}) {
    stats.alerts_firing[std::string(monitor::to_string(severity))] = 0;
  }
  for (const auto& alert : monitoring_.evaluator.active()) {
    if (alert.state == AlertState::kFiring) {
      ++stats.alerts_firing[std::string(monitor::to_string(alert.severity))];
    }
  }
  for (const auto& offer : offers()) {
    if (offer.price_per_gpu_hour) {
      stats.price_per_gpu_hour[offer.gpu_type] =
          static_cast<double>(*offer.price_per_gpu_hour) / static_cast<double>(kMicrosPerUnit);
    }
  }
  stats.samples_accepted = monitoring_.series.accepted();
  stats.samples_refused = monitoring_.series.refused();
  stats.series_memory =
      monitoring_.series.read([](const monitor::SeriesStore& series) { return series.memory(); });
  return stats;
}

}  // namespace gpurent::controller
