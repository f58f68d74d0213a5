#include "controller/fleet_monitor.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "controller/internal.h"

namespace gpurent::controller {

using monitor::AlertState;
using monitor::Observation;
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

std::string describe(const monitor::Transition& t) {
  const std::string value = t.subject.value ? fmt::format("{:g}", *t.subject.value) : "missing";
  return fmt::format("alert {} ({}) {} on {}: {} = {}", t.rule, monitor::to_string(t.severity),
                     monitor::to_string(t.to), t.subject.subject,
                     monitor::signal_name(t.subject.signal), value);
}

bool fixed_rule(const std::vector<monitor::Rule>& config, std::string_view name) {
  const auto named = [&](const monitor::Rule& rule) { return rule.name == name; };
  const auto builtin = monitor::builtin_rules();
  return std::any_of(builtin.begin(), builtin.end(), named) ||
         std::any_of(config.begin(), config.end(), named);
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

// Built-in, then the config file's, then the API's.
std::vector<monitor::Rule> FleetMonitor::rules_in_force() const {
  monitor::BuiltinLimits limits;
  limits.heartbeat_timeout_s = static_cast<double>(c_.heartbeat_timeout.count()) / 1000.0;
  limits.clock_skew_ms = static_cast<double>(c_.clock_skew_limit.count());
  auto rules = monitor::builtin_rules(limits);
  rules.insert(rules.end(), config_rules_.begin(), config_rules_.end());
  for (const auto& [name, rule] : api_rules_) rules.push_back(rule);
  return rules;
}

std::vector<monitor::Metric> FleetMonitor::watched_metrics() const {
  std::vector<monitor::Metric> watched;
  for (const auto& rule : evaluator_.rules()) {
    if (rule.signal.kind == SignalKind::kGpuMetric &&
        std::find(watched.begin(), watched.end(), rule.signal.metric) == watched.end()) {
      watched.push_back(rule.signal.metric);
    }
  }
  std::sort(watched.begin(), watched.end());
  return watched;
}

std::map<std::string, int> FleetMonitor::firing_by_severity() const {
  std::map<std::string, int> firing;
  for (const auto severity :
       {monitor::Severity::kInfo, monitor::Severity::kWarning, monitor::Severity::kCritical}) {
    firing[std::string(monitor::to_string(severity))] = 0;
  }
  for (const auto& alert : evaluator_.active()) {
    if (alert.state == AlertState::kFiring) {
      ++firing[std::string(monitor::to_string(alert.severity))];
    }
  }
  return firing;
}

Status FleetMonitor::restore(MonitoringSnapshot& snapshot) {
  const auto loaded = series_.write([&](monitor::SeriesStore& series) {
    return series.load_rollups(snapshot.rollups, unix_ms(now()));
  });
  spdlog::info("monitoring: {} rollup rows loaded, {} expired, {} refused; {} alert rules",
               loaded.loaded, loaded.expired, loaded.refused, snapshot.alert_rules.size());
  for (auto& rule : snapshot.alert_rules) {
    std::string name = rule.name;
    api_rules_.insert_or_assign(std::move(name), std::move(rule));
  }
  for (auto& record : snapshot.alert_history) {
    last_history_seq_ = std::max(last_history_seq_, record.seq);
    history_.push_back(std::move(record));
  }
  while (history_.size() > kMaxAlertHistory) history_.pop_front();
  // The alerts whose latest record is active and acknowledged (monitoring.h).
  std::map<std::pair<std::string_view, std::string_view>, const AlertRecord*> latest;
  for (const auto& record : history_) {
    latest[{record.transition.rule, record.transition.subject.subject}] = &record;
  }
  for (const auto& [key, record] : latest) {
    const AlertState to = record->transition.to;
    if (record->ack && (to == AlertState::kPending || to == AlertState::kFiring)) {
      restored_acks_.push_back({std::string(key.first), std::string(key.second), *record->ack});
    }
  }
  restored_acks_until_ = now() + kRestoredAckWindow;
  rules_changed_ = true;
  return {};
}

void FleetMonitor::collect_rollups() {
  if (c_.series_fed_by_host) return;  // the host persists them (store::RollupWriter)
  auto rows = series_.take_rollups(kMaxRollupRowsPerCommit);
  auto& to = c_.changes.monitoring_changes.rollups;
  to.insert(to.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
}

std::vector<monitor::Transition> FleetMonitor::tick(const Observe& observe) {
  const Timestamp t = now();
  if (t - last_compaction_ >= kCompactionInterval) {
    last_compaction_ = t;
    series_.write([&](monitor::SeriesStore& series) { series.compact(unix_ms(t)); });
    const monitor::StoreOptions retention;
    c_.changes.monitoring_changes.prune =
        RollupPrune{.minute_before_ms = unix_ms(t) - retention.minute_retention_ms,
                    .hour_before_ms = unix_ms(t) - retention.hour_retention_ms};
  }
  // Every tick: the rows the telemetry thread's samples completed reach the store in slices.
  collect_rollups();
  if (t - last_evaluation_ < kAlertEvaluationInterval) return {};
  last_evaluation_ = t;
  if (rules_changed_) rebuild_rules();
  observed_.clear();
  observe(observed_, watched_metrics());
  std::vector<monitor::Transition> auto_stops;
  for (auto& transition : evaluator_.evaluate(unix_ms(t), observed_)) {
    record(transition);
    if (transition.to == AlertState::kFiring && transition.auto_stop) {
      auto_stops.push_back(std::move(transition));
    }
  }
  reapply_restored_acks();
  return auto_stops;
}

void FleetMonitor::reapply_restored_acks() {
  auto& waiting = restored_acks_;
  if (waiting.empty()) return;
  if (now() > restored_acks_until_) {
    spdlog::info("monitoring: {} acknowledgements dropped: their alerts did not come back",
                 waiting.size());
    waiting.clear();
    return;
  }
  std::erase_if(waiting, [&](const RestoredAck& restored) {
    // Fails (alert_not_found) while the alert is not active yet.
    if (!evaluator_.acknowledge(restored.rule, restored.subject, restored.ack.by,
                                restored.ack.at_ms)) {
      return false;
    }
    record_acknowledgement(restored.rule, restored.subject, restored.ack);
    return true;
  });
}

void FleetMonitor::record_acknowledgement(std::string_view rule, std::string_view subject,
                                          const AlertAck& ack) {
  for (auto it = history_.rbegin(); it != history_.rend(); ++it) {
    if (it->transition.rule != rule || it->transition.subject.subject != subject) continue;
    if (it->ack) return;  // the first acknowledgement stays
    it->ack = ack;
    c_.changes.monitoring_changes.acknowledged.push_back(*it);
    return;
  }
}

void FleetMonitor::rebuild_rules() {
  // Names are checked where rules come in, so this cannot fail; if it did, the old rules stay.
  if (auto set = evaluator_.set_rules(rules_in_force()); !set) {
    spdlog::error("alert rules not applied: {}", set.error().message);
  }
  rules_changed_ = false;
}

void FleetMonitor::record(const monitor::Transition& transition) {
  AlertRecord record{.seq = ++last_history_seq_, .transition = transition};
  if (transition.from == AlertState::kPending && transition.to == AlertState::kFiring) {
    // An alert acknowledged while pending stays acknowledged as it fires (monitor/alerts.h).
    for (auto it = history_.rbegin(); it != history_.rend(); ++it) {
      if (it->transition.rule != transition.rule ||
          it->transition.subject.subject != transition.subject.subject) {
        continue;
      }
      record.ack = it->ack;
      break;
    }
  }
  history_.push_back(record);
  if (history_.size() > kMaxAlertHistory) history_.pop_front();
  c_.changes.monitoring_changes.alert_history.push_back(std::move(record));

  const bool fired = transition.to == AlertState::kFiring;
  const bool resolved = transition.from == AlertState::kFiring;
  if (!fired && !resolved) return;  // pending, or pending that cleared: no one is told
  const std::string tenant = tenant_alert(transition.subject) ? transition.subject.tenant : "";
  c_.events.record(tenant, transition.subject.subject, fired ? "alert.firing" : "alert.resolved",
                   describe(transition));
}

Status FleetMonitor::set_config_rules(std::vector<monitor::Rule> rules) {
  std::vector<monitor::Rule> all = monitor::builtin_rules();
  all.insert(all.end(), rules.begin(), rules.end());
  GPURENT_CHECK(monitor::validate_rules(all));
  for (const auto& rule : rules) {
    if (api_rules_.contains(rule.name)) {
      return fail(Error::invalid("duplicate_rule_name",
                                 fmt::format("rule '{}' is also set through the API", rule.name)));
    }
  }
  config_rules_ = std::move(rules);
  rules_changed_ = true;
  return {};
}

Result<std::vector<monitor::Rule>> FleetMonitor::rules(const Principal& caller) const {
  if (!caller.is_operator()) return fail(forbidden("list alert rules"));
  return rules_in_force();
}

Result<monitor::Rule> FleetMonitor::put_rule(const Principal& caller, monitor::Rule rule) {
  if (!caller.is_operator()) return fail(forbidden("set alert rules"));
  GPURENT_CHECK(monitor::validate(rule));
  if (fixed_rule(config_rules_, rule.name)) {
    return fail(
        Error::conflict("rule_not_editable",
                        fmt::format("rule '{}' is built in or set in the config file", rule.name)));
  }
  if (!api_rules_.contains(rule.name) && api_rules_.size() >= kMaxApiAlertRules) {
    return fail(Error::conflict("too_many_rules",
                                fmt::format("at most {} rules may be set", kMaxApiAlertRules)));
  }
  api_rules_.insert_or_assign(rule.name, rule);
  c_.changes.monitoring_changes.rule_changes.push_back({rule.name, rule});
  rules_changed_ = true;
  return rule;
}

Status FleetMonitor::delete_rule(const Principal& caller, std::string_view name) {
  if (!caller.is_operator()) return fail(forbidden("delete alert rules"));
  if (fixed_rule(config_rules_, name)) {
    return fail(Error::conflict(
        "rule_not_editable", fmt::format("rule '{}' is built in or set in the config file", name)));
  }
  const auto it = api_rules_.find(name);
  if (it == api_rules_.end()) return fail(Error::not_found("alert rule", name));
  api_rules_.erase(it);
  c_.changes.monitoring_changes.rule_changes.push_back({std::string(name), std::nullopt});
  rules_changed_ = true;
  return {};
}

std::string FleetMonitor::alert_id(std::string_view rule, std::string_view subject) {
  return fmt::format("{}:{}", rule, subject);
}

AlertList FleetMonitor::alerts(const Principal& caller, size_t history_limit) const {
  AlertList list;
  for (auto& alert : evaluator_.active()) {
    if (visible_alert(caller, alert.subject)) list.active.push_back(std::move(alert));
  }
  for (auto it = history_.rbegin(); it != history_.rend() && list.history.size() < history_limit;
       ++it) {
    if (visible_alert(caller, it->transition.subject)) list.history.push_back(&*it);
  }
  std::reverse(list.history.begin(), list.history.end());
  return list;
}

Status FleetMonitor::acknowledge(const Principal& caller, std::string_view id) {
  // Rule names hold no ':', so the first one ends the rule.
  const size_t colon = id.find(':');
  const auto not_found = [&] {
    return fail(Error{ErrorKind::kNotFound, "alert_not_found",
                      fmt::format("no pending or firing alert {}", id)});
  };
  if (colon == std::string_view::npos) return not_found();
  const std::string_view rule = id.substr(0, colon);
  const std::string_view subject = id.substr(colon + 1);
  for (const auto& alert : evaluator_.active()) {
    if (alert.rule != rule || alert.subject.subject != subject) continue;
    if (!visible_alert(caller, alert.subject)) break;
    GPURENT_CHECK(evaluator_.acknowledge(rule, subject, caller.key_id, unix_ms(now())));
    record_acknowledgement(rule, subject, {.by = caller.key_id, .at_ms = unix_ms(now())});
    c_.events.record(
        tenant_alert(alert.subject) ? alert.subject.tenant : "", subject, "alert.acknowledged",
        fmt::format("alert {} on {} acknowledged by key {}", rule, subject, caller.key_id));
    return {};
  }
  return not_found();
}

}  // namespace gpurent::controller
