#include "monitor/alerts.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace gpurent::monitor {
namespace {

constexpr Comparison kComparisons[] = {Comparison::kGt,    Comparison::kGe, Comparison::kLt,
                                       Comparison::kLe,    Comparison::kEq, Comparison::kNe,
                                       Comparison::kAbsent};
constexpr Severity kSeverities[] = {Severity::kInfo, Severity::kWarning, Severity::kCritical};
constexpr Scope::Kind kScopeKinds[] = {Scope::Kind::kAll, Scope::Kind::kNode, Scope::Kind::kGpuType,
                                       Scope::Kind::kInstance};

bool in_scope(const Scope& scope, const ObservationRef& observation) {
  switch (scope.kind) {
    case Scope::Kind::kAll:
      return true;
    case Scope::Kind::kNode:
      return observation.node == scope.value;
    case Scope::Kind::kGpuType:
      return observation.gpu_type == scope.value;
    case Scope::Kind::kInstance:
      return observation.instance == scope.value;
  }
  return false;
}

// A missing or NaN value satisfies no comparison: only "absent" fires on missing data.
bool holds(const Rule& rule, const std::optional<double>& value) {
  if (rule.comparison == Comparison::kAbsent) return !value.has_value();
  if (!value || std::isnan(*value)) return false;
  switch (rule.comparison) {
    case Comparison::kGt:
      return *value > rule.threshold;
    case Comparison::kGe:
      return *value >= rule.threshold;
    case Comparison::kLt:
      return *value < rule.threshold;
    case Comparison::kLe:
      return *value <= rule.threshold;
    case Comparison::kEq:
      return *value == rule.threshold;
    case Comparison::kNe:
      return *value != rule.threshold;
    case Comparison::kAbsent:
      break;
  }
  return false;
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

Rule rule(std::string name, Signal signal, Comparison comparison, double threshold, int64_t for_ms,
          Severity severity) {
  Rule r;
  r.name = std::move(name);
  r.signal = signal;
  r.comparison = comparison;
  r.threshold = threshold;
  r.for_ms = for_ms;
  r.severity = severity;
  return r;
}

Signal gpu(Metric metric) { return {SignalKind::kGpuMetric, metric}; }

}  // namespace

std::string_view to_string(Comparison comparison) {
  switch (comparison) {
    case Comparison::kGt:
      return ">";
    case Comparison::kGe:
      return ">=";
    case Comparison::kLt:
      return "<";
    case Comparison::kLe:
      return "<=";
    case Comparison::kEq:
      return "==";
    case Comparison::kNe:
      return "!=";
    case Comparison::kAbsent:
      return "absent";
  }
  return "?";
}

std::optional<Comparison> parse_comparison(std::string_view text) {
  for (Comparison c : kComparisons) {
    if (text == to_string(c)) return c;
  }
  return std::nullopt;
}

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "?";
}

std::optional<Severity> parse_severity(std::string_view text) {
  for (Severity s : kSeverities) {
    if (text == to_string(s)) return s;
  }
  return std::nullopt;
}

std::string signal_name(Signal signal) {
  switch (signal.kind) {
    case SignalKind::kGpuMetric:
      return std::string(metric_info(signal.metric).name);
    case SignalKind::kNodeHeartbeatAge:
      return "node_heartbeat_age_s";
    case SignalKind::kNodeClockSkew:
      return "node_clock_skew_ms";
    case SignalKind::kInstanceGpuUtil:
      return "instance_gpu_util";
    case SignalKind::kGpuBenchmarkShortfall:
      return "gpu_benchmark_shortfall_percent";
  }
  return "?";
}

std::optional<Signal> parse_signal(std::string_view text) {
  if (std::optional<Metric> metric = parse_metric(text)) return gpu(*metric);
  for (SignalKind kind : {SignalKind::kNodeHeartbeatAge, SignalKind::kNodeClockSkew,
                          SignalKind::kInstanceGpuUtil, SignalKind::kGpuBenchmarkShortfall}) {
    if (text == signal_name({kind})) return Signal{kind};
  }
  return std::nullopt;
}

std::string_view to_string(Scope::Kind kind) {
  switch (kind) {
    case Scope::Kind::kAll:
      return "all";
    case Scope::Kind::kNode:
      return "node";
    case Scope::Kind::kGpuType:
      return "gpu_type";
    case Scope::Kind::kInstance:
      return "instance";
  }
  return "?";
}

std::optional<Scope::Kind> parse_scope_kind(std::string_view text) {
  for (Scope::Kind k : kScopeKinds) {
    if (text == to_string(k)) return k;
  }
  return std::nullopt;
}

std::string_view to_string(AlertState state) {
  switch (state) {
    case AlertState::kInactive:
      return "inactive";
    case AlertState::kPending:
      return "pending";
    case AlertState::kFiring:
      return "firing";
    case AlertState::kResolved:
      return "resolved";
  }
  return "?";
}

Status validate(const Rule& rule) {
  if (!valid_name(rule.name)) {
    return fail(Error::invalid(
        "invalid_rule_name",
        fmt::format("rule name '{}' must be 1 to 64 characters of a-z, 0-9, '_', '.' and '-'",
                    rule.name)));
  }
  if (rule.comparison != Comparison::kAbsent && !std::isfinite(rule.threshold)) {
    return fail(
        Error::invalid("invalid_threshold",
                       fmt::format("rule '{}': the threshold must be a finite number", rule.name)));
  }
  if (rule.for_ms < 0 || rule.for_ms > kMaxRuleForMs) {
    return fail(Error::invalid(
        "invalid_for", fmt::format("rule '{}': 'for' must be between 0 and 7 days, got {} ms",
                                   rule.name, rule.for_ms)));
  }
  if ((rule.scope.kind == Scope::Kind::kAll) != rule.scope.value.empty()) {
    return fail(Error::invalid("invalid_scope",
                               rule.scope.kind == Scope::Kind::kAll
                                   ? fmt::format("rule '{}': scope 'all' takes no value", rule.name)
                                   : fmt::format("rule '{}': scope '{}' needs a value", rule.name,
                                                 to_string(rule.scope.kind))));
  }
  if (rule.idle && rule.signal.kind != SignalKind::kInstanceGpuUtil) {
    return fail(Error::invalid(
        "invalid_idle_policy",
        fmt::format("rule '{}': an idle policy needs the signal 'instance_gpu_util', not '{}'",
                    rule.name, signal_name(rule.signal))));
  }
  return {};
}

Status validate_rules(std::span<const Rule> rules) {
  std::set<std::string_view> names;
  for (const Rule& rule : rules) {
    GPURENT_CHECK(validate(rule));
    if (!names.insert(rule.name).second) {
      return fail(Error::invalid("duplicate_rule_name",
                                 fmt::format("two rules are named '{}'", rule.name)));
    }
  }
  return {};
}

std::vector<Rule> builtin_rules(const BuiltinLimits& limits) {
  Rule idle = rule("instance_idle", {SignalKind::kInstanceGpuUtil}, Comparison::kLt,
                   limits.idle_util_percent, limits.idle_for_ms, Severity::kInfo);
  idle.idle = IdlePolicy{};
  return {
      rule("gpu_temperature_high", gpu(Metric::kGpuTemp), Comparison::kGt, limits.gpu_temp_c,
           limits.gpu_temp_for_ms, Severity::kWarning),
      // DCGM reports the last XID code seen; any non-zero code is an error worth a look.
      rule("gpu_xid_error", gpu(Metric::kXidErrors), Comparison::kNe, 0, 0, Severity::kCritical),
      rule("gpu_ecc_double_bit", gpu(Metric::kEccDbe), Comparison::kGt, 0, 0, Severity::kCritical),
      rule("gpu_missing", gpu(Metric::kGpuUtil), Comparison::kAbsent, 0, limits.gpu_missing_for_ms,
           Severity::kCritical),
      // A GPU measurably slower than the others of its type (controller/gpu_benchmarks.h): its
      // tenants get less than they pay for.
      rule("gpu_benchmark_slow", {SignalKind::kGpuBenchmarkShortfall}, Comparison::kGt,
           limits.benchmark_shortfall_percent, 0, Severity::kWarning),
      rule("node_heartbeat_lost", {SignalKind::kNodeHeartbeatAge}, Comparison::kGt,
           limits.heartbeat_timeout_s, 0, Severity::kCritical),
      rule("agent_clock_skew", {SignalKind::kNodeClockSkew}, Comparison::kGt, limits.clock_skew_ms,
           60'000, Severity::kWarning),
      std::move(idle),
  };
}

Rule idle_rule(std::string_view instance_id, double below_percent, int64_t for_ms, bool auto_stop) {
  Rule r = rule(fmt::format("instance_idle.{}", instance_id), {SignalKind::kInstanceGpuUtil},
                Comparison::kLt, below_percent, for_ms, Severity::kInfo);
  r.scope = {Scope::Kind::kInstance, std::string(instance_id)};
  r.idle = IdlePolicy{auto_stop};
  return r;
}

Status Evaluator::set_rules(std::vector<Rule> rules) {
  GPURENT_CHECK(validate_rules(rules));
  rules_ = std::move(rules);
  return {};
}

void Evaluator::record(std::vector<Transition>& out, Transition transition) {
  history_.push_back(transition);
  while (history_.size() > options_.history_limit) history_.pop_front();
  out.push_back(std::move(transition));
}

ObservationRef ObservationRef::of(const Observation& observation) {
  return {observation.signal,   observation.subject, observation.node, observation.gpu_type,
          observation.instance, observation.tenant,  observation.value};
}

Observation ObservationRef::owned() const {
  return {signal,
          std::string(subject),
          std::string(node),
          std::string(gpu_type),
          std::string(instance),
          std::string(tenant),
          value};
}

std::vector<Transition> Evaluator::evaluate(int64_t now_ms,
                                            std::span<const Observation> observations) {
  std::vector<ObservationRef> refs;
  refs.reserve(observations.size());
  for (const auto& observation : observations) refs.push_back(ObservationRef::of(observation));
  return evaluate(now_ms, refs);
}

std::vector<Transition> Evaluator::evaluate(int64_t now_ms,
                                            std::span<const ObservationRef> observations) {
  now_ms = std::max(now_ms, last_now_ms_);
  last_now_ms_ = now_ms;
  const uint64_t evaluation = ++evaluations_;
  // Each rule reads only the observations of its signal: grouped once here (a handful of
  // signals, each group in observation order), where a pass over all of them per rule cost the
  // observations times the rules (tenants' idle rules are one per instance).
  std::vector<std::pair<Signal, std::vector<uint32_t>>> by_signal;
  for (uint32_t i = 0; i < observations.size(); ++i) {
    const Signal signal = observations[i].signal;
    auto group = std::find_if(by_signal.begin(), by_signal.end(),
                              [&](const auto& entry) { return entry.first == signal; });
    if (group == by_signal.end()) group = by_signal.insert(by_signal.end(), {signal, {}});
    group->second.push_back(i);
  }
  std::vector<Transition> out;
  for (const Rule& rule : rules_) {
    const bool auto_stop = rule.idle && rule.idle->auto_stop;
    const auto group = std::find_if(by_signal.begin(), by_signal.end(),
                                    [&](const auto& entry) { return entry.first == rule.signal; });
    if (group == by_signal.end()) continue;
    for (const uint32_t i : group->second) {
      const ObservationRef& observation = observations[i];
      if (!in_scope(rule.scope, observation)) continue;
      const bool condition = holds(rule, observation.value);
      if (!condition && alerts_.empty()) continue;  // the common case: nothing to look up
      auto it = alerts_.find(KeyView(rule.name, observation.subject));
      if (!condition) {
        if (it == alerts_.end()) continue;
        record(out, {rule.name, rule.severity, it->second.alert.state, AlertState::kResolved,
                     now_ms, observation.owned(), auto_stop});
        alerts_.erase(it);
        continue;
      }
      if (it == alerts_.end()) {
        Alert alert;
        alert.rule = rule.name;
        alert.state = AlertState::kInactive;  // becomes pending or firing just below
        alert.active_since_ms = now_ms;
        it = alerts_.emplace(Key(rule.name, observation.subject), Tracked{std::move(alert)}).first;
      }
      it->second.observed_in = evaluation;
      Alert& alert = it->second.alert;
      alert.severity = rule.severity;
      alert.subject = observation.owned();
      alert.auto_stop = auto_stop;
      const AlertState from = alert.state;
      const AlertState to = now_ms - alert.active_since_ms >= rule.for_ms ? AlertState::kFiring
                                                                          : AlertState::kPending;
      if (to == from) continue;
      alert.state = to;
      if (to == AlertState::kFiring) alert.fired_at_ms = now_ms;
      record(out, {rule.name, rule.severity, from, to, now_ms, alert.subject, auto_stop});
    }
  }
  for (auto it = alerts_.begin(); it != alerts_.end();) {
    if (it->second.observed_in == evaluation) {
      ++it;
      continue;
    }
    const Alert& alert = it->second.alert;
    record(out, {alert.rule, alert.severity, alert.state, AlertState::kResolved, now_ms,
                 alert.subject, alert.auto_stop});
    it = alerts_.erase(it);
  }
  return out;
}

std::vector<Alert> Evaluator::active() const {
  std::vector<Alert> alerts;
  alerts.reserve(alerts_.size());
  for (const auto& [key, tracked] : alerts_) alerts.push_back(tracked.alert);
  return alerts;
}

Status Evaluator::acknowledge(std::string_view rule, std::string_view subject, std::string_view by,
                              int64_t now_ms) {
  auto it = alerts_.find(KeyView(rule, subject));
  if (it == alerts_.end()) {
    return fail(
        Error{ErrorKind::kNotFound, "alert_not_found",
              fmt::format("no pending or firing alert of rule '{}' for '{}'", rule, subject)});
  }
  Alert& alert = it->second.alert;
  if (alert.acknowledged) return {};
  alert.acknowledged = true;
  alert.acknowledged_by = by;
  alert.acknowledged_at_ms = now_ms;
  return {};
}

}  // namespace gpurent::monitor
