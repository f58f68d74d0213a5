#include "monitor/alerts_json.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace gpurent::monitor {
namespace {

constexpr std::array<std::string_view, 9> kRuleFields = {
    "name",     "metric", "comparison",  "threshold",     "for_s",
    "severity", "scope",  "scope_value", "idle_auto_stop"};

Result<std::string> required_text(const Json& body, std::string_view key) {
  return required_string(body, key, 128);
}

std::optional<AlertState> parse_state(std::string_view text) {
  for (AlertState state :
       {AlertState::kInactive, AlertState::kPending, AlertState::kFiring, AlertState::kResolved}) {
    if (to_string(state) == text) return state;
  }
  return std::nullopt;
}

}  // namespace

Json rule_to_json(const Rule& rule) {
  Json out = {{"name", rule.name},
              {"metric", signal_name(rule.signal)},
              {"comparison", to_string(rule.comparison)},
              {"threshold", rule.threshold},
              {"for_s", static_cast<double>(rule.for_ms) / 1000.0},
              {"severity", to_string(rule.severity)},
              {"scope", to_string(rule.scope.kind)}};
  if (rule.scope.kind != Scope::Kind::kAll) out["scope_value"] = rule.scope.value;
  if (rule.idle) out["idle_auto_stop"] = rule.idle->auto_stop;
  return out;
}

Result<Rule> rule_from_json(const Json& body) {
  if (!body.is_object()) return fail(Error::invalid("invalid_body", "a rule is a JSON object"));
  for (const auto& [key, value] : body.items()) {
    if (std::find(kRuleFields.begin(), kRuleFields.end(), key) == kRuleFields.end()) {
      return fail(Error::invalid("unknown_field", fmt::format("unknown field '{}'", key)));
    }
  }
  Rule rule;
  GPURENT_TRY(name, required_text(body, "name"));
  rule.name = std::move(name);
  GPURENT_TRY(metric, required_text(body, "metric"));
  auto signal = parse_signal(metric);
  if (!signal) return fail(invalid_field("metric", fmt::format("unknown metric '{}'", metric)));
  rule.signal = *signal;
  GPURENT_TRY(comparison, required_text(body, "comparison"));
  auto parsed_comparison = parse_comparison(comparison);
  if (!parsed_comparison) {
    return fail(invalid_field("comparison", "must be one of >, >=, <, <=, ==, !=, absent"));
  }
  rule.comparison = *parsed_comparison;
  const auto number = [&](std::string_view key) -> Result<std::optional<double>> {
    const auto it = body.find(key);
    if (it == body.end() || it->is_null()) return std::optional<double>();
    if (!it->is_number()) return fail(invalid_field(key, "must be a number"));
    const double value = it->get<double>();
    if (!std::isfinite(value)) return fail(invalid_field(key, "must be finite"));
    return std::optional<double>(value);
  };
  GPURENT_TRY(threshold, number("threshold"));
  if (!threshold && rule.comparison != Comparison::kAbsent) {
    return fail(invalid_field("threshold", "is required"));
  }
  rule.threshold = threshold.value_or(0);
  GPURENT_TRY(for_s, number("for_s"));
  if (for_s && (*for_s < 0 || *for_s * 1000 > static_cast<double>(kMaxRuleForMs))) {
    return fail(Error::invalid("invalid_for", "for_s must be between 0 and 7 days"));
  }
  rule.for_ms = static_cast<int64_t>(std::llround(for_s.value_or(0) * 1000));
  GPURENT_TRY(severity, optional_string(body, "severity", 16));
  if (severity) {
    auto parsed = parse_severity(*severity);
    if (!parsed) return fail(invalid_field("severity", "must be info, warning or critical"));
    rule.severity = *parsed;
  }
  GPURENT_TRY(scope, optional_string(body, "scope", 16));
  if (scope) {
    auto kind = parse_scope_kind(*scope);
    if (!kind) return fail(invalid_field("scope", "must be all, node, gpu_type or instance"));
    rule.scope.kind = *kind;
  }
  GPURENT_TRY(scope_value, optional_string(body, "scope_value", 128));
  rule.scope.value = scope_value.value_or("");
  GPURENT_TRY(auto_stop, optional_bool(body, "idle_auto_stop"));
  if (auto_stop) rule.idle = IdlePolicy{.auto_stop = *auto_stop};
  GPURENT_CHECK(validate(rule));
  return rule;
}

Json observation_to_json(const Observation& o) {
  return {{"metric", signal_name(o.signal)},
          {"subject", o.subject},
          {"node", o.node},
          {"gpu_type", o.gpu_type},
          {"instance", o.instance},
          {"tenant", o.tenant},
          {"value", o.value ? Json(*o.value) : Json(nullptr)}};
}

Json transition_to_json(const Transition& t) {
  return {{"rule", t.rule},
          {"severity", to_string(t.severity)},
          {"from", to_string(t.from)},
          {"to", to_string(t.to)},
          {"at_ms", t.at_ms},
          {"subject", observation_to_json(t.subject)},
          {"auto_stop", t.auto_stop}};
}

Result<Transition> transition_from_json(const Json& body) {
  const auto corrupt = [](std::string_view why) {
    return fail(Error::internal(fmt::format("corrupt alert transition: {}", why)));
  };
  try {  // nlohmann reports a missing key or a wrong type by throwing
    Transition t;
    t.rule = body.at("rule").get<std::string>();
    auto severity = parse_severity(body.at("severity").get<std::string>());
    auto from = parse_state(body.at("from").get<std::string>());
    auto to = parse_state(body.at("to").get<std::string>());
    if (!severity || !from || !to) return corrupt("unknown severity or state");
    t.severity = *severity;
    t.from = *from;
    t.to = *to;
    t.at_ms = body.at("at_ms").get<int64_t>();
    t.auto_stop = body.at("auto_stop").get<bool>();
    const Json& s = body.at("subject");
    auto signal = parse_signal(s.at("metric").get<std::string>());
    if (!signal) return corrupt("unknown metric");
    t.subject.signal = *signal;
    t.subject.subject = s.at("subject").get<std::string>();
    t.subject.node = s.at("node").get<std::string>();
    t.subject.gpu_type = s.at("gpu_type").get<std::string>();
    t.subject.instance = s.at("instance").get<std::string>();
    t.subject.tenant = s.at("tenant").get<std::string>();
    if (!s.at("value").is_null()) t.subject.value = s.at("value").get<double>();
    return t;
  } catch (const std::exception& e) {
    return corrupt(e.what());
  }
}

}  // namespace gpurent::monitor
