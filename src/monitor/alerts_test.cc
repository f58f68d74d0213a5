#include "monitor/alerts.h"

#include <gtest/gtest.h>

#include <limits>

namespace gpurent::monitor {
namespace {

constexpr int64_t kS = 1000;

Observation gpu_obs(std::string uuid, Metric metric, std::optional<double> value,
                    std::string node = "node-1", std::string type = "h100-80g") {
  Observation o;
  o.signal = {SignalKind::kGpuMetric, metric};
  o.subject = std::move(uuid);
  o.node = std::move(node);
  o.gpu_type = std::move(type);
  o.value = value;
  return o;
}

Observation node_obs(SignalKind kind, std::string node, std::optional<double> value) {
  Observation o;
  o.signal = {kind};
  o.subject = node;
  o.node = std::move(node);
  o.value = value;
  return o;
}

Rule temp_rule(int64_t for_ms = 60 * kS) {
  Rule rule;
  rule.name = "hot";
  rule.signal = {SignalKind::kGpuMetric, Metric::kGpuTemp};
  rule.comparison = Comparison::kGt;
  rule.threshold = 85;
  rule.for_ms = for_ms;
  rule.severity = Severity::kCritical;
  return rule;
}

// "from->to" for each transition, for compact expectations.
std::vector<std::string> states(const std::vector<Transition>& transitions) {
  std::vector<std::string> out;
  for (const Transition& t : transitions) {
    out.push_back(t.rule + ":" + t.subject.subject + ":" + std::string(to_string(t.from)) + "->" +
                  std::string(to_string(t.to)));
  }
  return out;
}

using Strings = std::vector<std::string>;

TEST(Alerts, PendingFiringResolvedOverAFakeTimeSequence) {
  Evaluator evaluator;
  ASSERT_TRUE(evaluator.set_rules({temp_rule()}));
  auto at = [&](int64_t seconds, double temp) {
    const Observation obs[] = {gpu_obs("GPU-a", Metric::kGpuTemp, temp),
                               gpu_obs("GPU-b", Metric::kGpuTemp, 50)};
    return states(evaluator.evaluate(seconds * kS, obs));
  };
  EXPECT_EQ(at(0, 80), Strings{});
  EXPECT_EQ(at(10, 90), Strings{"hot:GPU-a:inactive->pending"});
  EXPECT_EQ(at(40, 91), Strings{});
  ASSERT_EQ(evaluator.active().size(), 1u);
  EXPECT_EQ(evaluator.active()[0].state, AlertState::kPending);
  EXPECT_EQ(at(70, 92), Strings{"hot:GPU-a:pending->firing"});
  const Alert firing = evaluator.active()[0];
  EXPECT_EQ(firing.active_since_ms, 10 * kS);
  EXPECT_EQ(firing.fired_at_ms, 70 * kS);
  EXPECT_EQ(firing.subject.value, 92);
  EXPECT_EQ(firing.severity, Severity::kCritical);
  EXPECT_EQ(at(80, 93), Strings{});
  EXPECT_EQ(at(90, 85), Strings{"hot:GPU-a:firing->resolved"});
  EXPECT_TRUE(evaluator.active().empty());
  // A short spike clears while pending.
  EXPECT_EQ(at(100, 99), Strings{"hot:GPU-a:inactive->pending"});
  EXPECT_EQ(at(110, 20), Strings{"hot:GPU-a:pending->resolved"});
  ASSERT_EQ(evaluator.history().size(), 5u);
  EXPECT_EQ(evaluator.history()[2].at_ms, 90 * kS);
  EXPECT_EQ(evaluator.history()[2].subject.value, 85);
}

TEST(Alerts, ZeroForFiresAtOnceAndMissingValuesDoNotSatisfyComparisons) {
  Evaluator evaluator;
  const std::vector<Rule> builtin = builtin_rules();
  ASSERT_TRUE(evaluator.set_rules(builtin));
  const Observation xid[] = {
      gpu_obs("GPU-a", Metric::kXidErrors, 79), gpu_obs("GPU-b", Metric::kXidErrors, 0),
      gpu_obs("GPU-c", Metric::kXidErrors, std::nullopt), gpu_obs("GPU-a", Metric::kEccDbe, 1)};
  EXPECT_EQ(states(evaluator.evaluate(0, xid)),
            (Strings{"gpu_xid_error:GPU-a:inactive->firing",
                     "gpu_ecc_double_bit:GPU-a:inactive->firing"}));
}

TEST(Alerts, GpuMissingFiresOnAbsenceAfterItsFor) {
  Evaluator evaluator;
  ASSERT_TRUE(evaluator.set_rules(builtin_rules()));
  auto at = [&](int64_t seconds, std::optional<double> util) {
    const Observation obs[] = {gpu_obs("GPU-a", Metric::kGpuUtil, util)};
    return states(evaluator.evaluate(seconds * kS, obs));
  };
  EXPECT_EQ(at(0, 50), Strings{});
  EXPECT_EQ(at(1, std::nullopt), Strings{"gpu_missing:GPU-a:inactive->pending"});
  EXPECT_EQ(at(31, std::nullopt), Strings{"gpu_missing:GPU-a:pending->firing"});
  EXPECT_EQ(at(32, 0), Strings{"gpu_missing:GPU-a:firing->resolved"});
}

TEST(Alerts, NodeSignalsAndIdleInstances) {
  Evaluator evaluator;
  std::vector<Rule> rules = builtin_rules();
  rules.push_back(idle_rule("i-abc", 10, 5 * 60 * kS, true));
  ASSERT_TRUE(evaluator.set_rules(rules));
  Observation idle;
  idle.signal = {SignalKind::kInstanceGpuUtil};
  idle.subject = "i-abc";
  idle.instance = "i-abc";
  idle.tenant = "t-1";
  idle.value = 7;  // below the instance's 10 %, above the fleet-wide 5 %
  const Observation at0[] = {node_obs(SignalKind::kNodeHeartbeatAge, "node-1", 11),
                             node_obs(SignalKind::kNodeHeartbeatAge, "node-2", 1),
                             node_obs(SignalKind::kNodeClockSkew, "node-2", 2500), idle};
  EXPECT_EQ(states(evaluator.evaluate(0, at0)),
            (Strings{"node_heartbeat_lost:node-1:inactive->firing",
                     "agent_clock_skew:node-2:inactive->pending",
                     "instance_idle.i-abc:i-abc:inactive->pending"}));
  const auto transitions = evaluator.evaluate(5 * 60 * kS, at0);
  EXPECT_EQ(states(transitions), (Strings{"agent_clock_skew:node-2:pending->firing",
                                          "instance_idle.i-abc:i-abc:pending->firing"}));
  EXPECT_FALSE(transitions[0].auto_stop);
  EXPECT_TRUE(transitions[1].auto_stop);
  EXPECT_EQ(transitions[1].subject.tenant, "t-1");
}

TEST(Alerts, ScopesSelectNodesGpuTypesAndInstances) {
  Evaluator evaluator;
  Rule on_node = temp_rule(0);
  on_node.name = "hot-node-2";
  on_node.scope = {Scope::Kind::kNode, "node-2"};
  Rule on_type = temp_rule(0);
  on_type.name = "hot-a100";
  on_type.scope = {Scope::Kind::kGpuType, "a100-80g"};
  ASSERT_TRUE(evaluator.set_rules({on_node, on_type}));
  const Observation obs[] = {gpu_obs("GPU-a", Metric::kGpuTemp, 90, "node-1", "h100-80g"),
                             gpu_obs("GPU-b", Metric::kGpuTemp, 90, "node-2", "h100-80g"),
                             gpu_obs("GPU-c", Metric::kGpuTemp, 90, "node-3", "a100-80g")};
  EXPECT_EQ(states(evaluator.evaluate(0, obs)),
            (Strings{"hot-node-2:GPU-b:inactive->firing", "hot-a100:GPU-c:inactive->firing"}));
}

TEST(Alerts, UnobservedSubjectsAndRemovedRulesResolve) {
  Evaluator evaluator;
  Rule other = temp_rule(0);
  other.name = "warm";
  other.threshold = 70;
  ASSERT_TRUE(evaluator.set_rules({temp_rule(0), other}));
  const Observation both[] = {gpu_obs("GPU-a", Metric::kGpuTemp, 90),
                              gpu_obs("GPU-b", Metric::kGpuTemp, 90)};
  EXPECT_EQ(evaluator.evaluate(0, both).size(), 4u);
  const Observation only_a[] = {gpu_obs("GPU-a", Metric::kGpuTemp, 90)};
  EXPECT_EQ(states(evaluator.evaluate(kS, only_a)),
            (Strings{"hot:GPU-b:firing->resolved", "warm:GPU-b:firing->resolved"}));
  ASSERT_TRUE(evaluator.set_rules({other}));
  EXPECT_EQ(states(evaluator.evaluate(2 * kS, only_a)), (Strings{"hot:GPU-a:firing->resolved"}));
  ASSERT_EQ(evaluator.active().size(), 1u);
  EXPECT_EQ(evaluator.active()[0].rule, "warm");
}

TEST(Alerts, AcknowledgeUntilResolved) {
  Evaluator evaluator;
  ASSERT_TRUE(evaluator.set_rules({temp_rule(0)}));
  const Observation hot[] = {gpu_obs("GPU-a", Metric::kGpuTemp, 90)};
  const Observation cool[] = {gpu_obs("GPU-a", Metric::kGpuTemp, 40)};
  EXPECT_EQ(evaluator.acknowledge("hot", "GPU-a", "ops", 0).error().code, "alert_not_found");
  evaluator.evaluate(0, hot);
  ASSERT_TRUE(evaluator.acknowledge("hot", "GPU-a", "ops", 5 * kS));
  ASSERT_TRUE(evaluator.acknowledge("hot", "GPU-a", "someone-else", 6 * kS));
  Alert alert = evaluator.active()[0];
  EXPECT_TRUE(alert.acknowledged);
  EXPECT_EQ(alert.acknowledged_by, "ops");
  EXPECT_EQ(alert.acknowledged_at_ms, 5 * kS);
  evaluator.evaluate(10 * kS, hot);
  EXPECT_TRUE(evaluator.active()[0].acknowledged);
  evaluator.evaluate(20 * kS, cool);
  evaluator.evaluate(30 * kS, hot);
  EXPECT_FALSE(evaluator.active()[0].acknowledged);
  EXPECT_EQ(evaluator.acknowledge("hot", "GPU-z", "ops", 0).error().kind, ErrorKind::kNotFound);
}

TEST(Alerts, HistoryIsBounded) {
  Evaluator evaluator(EvaluatorOptions{3});
  ASSERT_TRUE(evaluator.set_rules({temp_rule(0)}));
  for (int i = 0; i < 10; ++i) {
    const Observation obs[] = {gpu_obs("GPU-a", Metric::kGpuTemp, i % 2 == 0 ? 90 : 40)};
    evaluator.evaluate(i * kS, obs);
  }
  ASSERT_EQ(evaluator.history().size(), 3u);
  EXPECT_EQ(evaluator.history().front().at_ms, 7 * kS);
  EXPECT_EQ(evaluator.history().back().to, AlertState::kResolved);
}

TEST(Alerts, ValidationErrorsAreValuesWithStableCodes) {
  auto code = [](Rule rule) {
    auto status = validate(rule);
    return status ? std::string("ok") : status.error().code;
  };
  EXPECT_EQ(code(temp_rule()), "ok");
  Rule bad = temp_rule();
  bad.name = "Hot Rule";
  EXPECT_EQ(code(bad), "invalid_rule_name");
  bad.name = std::string(65, 'a');
  EXPECT_EQ(code(bad), "invalid_rule_name");
  bad = temp_rule();
  bad.threshold = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(code(bad), "invalid_threshold");
  bad.comparison = Comparison::kAbsent;
  EXPECT_EQ(code(bad), "ok");
  bad = temp_rule(-1);
  EXPECT_EQ(code(bad), "invalid_for");
  bad = temp_rule(kMaxRuleForMs + 1);
  EXPECT_EQ(code(bad), "invalid_for");
  bad = temp_rule();
  bad.scope = {Scope::Kind::kNode, ""};
  EXPECT_EQ(code(bad), "invalid_scope");
  bad.scope = {Scope::Kind::kAll, "node-1"};
  EXPECT_EQ(code(bad), "invalid_scope");
  bad = temp_rule();
  bad.idle = IdlePolicy{true};
  EXPECT_EQ(code(bad), "invalid_idle_policy");
  EXPECT_NE(validate(bad).error().message.find("'hot'"), std::string::npos);

  Evaluator evaluator;
  ASSERT_TRUE(evaluator.set_rules({temp_rule()}));
  auto duplicate = evaluator.set_rules({temp_rule(), temp_rule(0)});
  ASSERT_FALSE(duplicate);
  EXPECT_EQ(duplicate.error().code, "duplicate_rule_name");
  EXPECT_EQ(evaluator.rules().size(), 1u);
  EXPECT_TRUE(validate_rules(builtin_rules()));
}

TEST(Alerts, NamesRoundTrip) {
  for (Comparison c : {Comparison::kGt, Comparison::kGe, Comparison::kLt, Comparison::kLe,
                       Comparison::kEq, Comparison::kNe, Comparison::kAbsent}) {
    EXPECT_EQ(parse_comparison(to_string(c)), c);
  }
  for (Severity s : {Severity::kInfo, Severity::kWarning, Severity::kCritical}) {
    EXPECT_EQ(parse_severity(to_string(s)), s);
  }
  for (Scope::Kind k :
       {Scope::Kind::kAll, Scope::Kind::kNode, Scope::Kind::kGpuType, Scope::Kind::kInstance}) {
    EXPECT_EQ(parse_scope_kind(to_string(k)), k);
  }
  for (const Rule& rule : builtin_rules()) {
    EXPECT_EQ(parse_signal(signal_name(rule.signal)), rule.signal) << rule.name;
  }
  EXPECT_EQ(parse_signal("DCGM_FI_DEV_GPU_TEMP"),
            (Signal{SignalKind::kGpuMetric, Metric::kGpuTemp}));
  EXPECT_EQ(parse_signal("nope"), std::nullopt);
  EXPECT_EQ(parse_comparison("=>"), std::nullopt);
}

}  // namespace
}  // namespace gpurent::monitor
