// Alert rules and their evaluation.
//
// A rule watches one signal (a GPU metric, a node's heartbeat age or clock skew, or an instance's
// GPU utilisation) and fires for each subject (GPU, node or instance) in its scope whose value
// satisfies `comparison threshold` continuously for `for`. "absent" instead fires while the
// subject's value is missing. Each (rule, subject) pair is one alert with the lifecycle
//   inactive -> pending -> firing -> resolved
// (straight to firing when `for` is 0; pending -> resolved when the condition clears first).
//
// Inputs: the rules (validated: errors are values with stable codes, for the API's 4xx); per
// evaluation, the current time and one observation per (signal, subject) in the fleet: the latest
// value, or none when the series is missing (a GPU absent from its agent's report, a node whose
// heartbeats stopped). Outputs: the transitions of that evaluation, the active alerts, a bounded
// history of transitions, acknowledgements. A (rule, subject) pair that an evaluation does not
// observe at all (the GPU left the inventory, the rule was removed) resolves.
//
// Deterministic: the same rules, times and observations give the same transitions in the same
// order (rules in order, then observations in order, then the unobserved alerts by rule and
// subject). No clock reads, no threads. Thread-safety: none; one owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "monitor/gpu_metrics.h"

namespace gpurent::monitor {

enum class Comparison : uint8_t { kGt, kGe, kLt, kLe, kEq, kNe, kAbsent };
std::string_view to_string(Comparison comparison);  // ">", ">=", "<", "<=", "==", "!=", "absent"
std::optional<Comparison> parse_comparison(std::string_view text);

enum class Severity : uint8_t { kInfo, kWarning, kCritical };
std::string_view to_string(Severity severity);
std::optional<Severity> parse_severity(std::string_view text);

enum class SignalKind : uint8_t {
  kGpuMetric,         // subject: a GPU uuid; the value of `metric`
  kNodeHeartbeatAge,  // subject: a node id; seconds since its last heartbeat
  kNodeClockSkew,     // subject: a node id; |agent clock - server clock| in ms
  kInstanceGpuUtil,   // subject: an instance id; mean utilisation % of its GPUs
  // subject: a GPU uuid; how far its newest benchmark falls below its type's median, in percent
  // (controller/gpu_benchmarks.h); observed only for GPUs judged against their type
  kGpuBenchmarkShortfall,
};

struct Signal {
  SignalKind kind = SignalKind::kGpuMetric;
  Metric metric = Metric::kGpuUtil;  // for kGpuMetric only
  bool operator==(const Signal&) const = default;
};
// The metric's short name, "node_heartbeat_age_s", "node_clock_skew_ms", "instance_gpu_util" or
// "gpu_benchmark_shortfall_percent".
std::string signal_name(Signal signal);
// Also accepts a metric's DCGM name.
std::optional<Signal> parse_signal(std::string_view text);

struct Scope {
  enum class Kind : uint8_t { kAll, kNode, kGpuType, kInstance };
  Kind kind = Kind::kAll;
  std::string value;  // node id, GPU type slug or instance id; empty for kAll
  bool operator==(const Scope&) const = default;
};
std::string_view to_string(Scope::Kind kind);  // "all", "node", "gpu_type", "instance"
std::optional<Scope::Kind> parse_scope_kind(std::string_view text);

// The per-instance part of an idle rule: what the controller does when it fires, beyond notifying.
struct IdlePolicy {
  bool auto_stop = false;
  bool operator==(const IdlePolicy&) const = default;
};

struct Rule {
  std::string name;  // unique; [a-z0-9_.-], 1 to 64 characters
  Signal signal;
  Comparison comparison = Comparison::kGt;
  double threshold = 0;  // finite; ignored by kAbsent
  int64_t for_ms = 0;    // 0 to 7 days
  Severity severity = Severity::kWarning;
  Scope scope;
  std::optional<IdlePolicy> idle;  // only with SignalKind::kInstanceGpuUtil
  bool operator==(const Rule&) const = default;
};

inline constexpr int64_t kMaxRuleForMs = 7 * 24 * 3'600'000LL;

// kInvalidArgument with codes "invalid_rule_name", "invalid_threshold", "invalid_for",
// "invalid_scope", "invalid_idle_policy"; validate_rules adds "duplicate_rule_name".
Status validate(const Rule& rule);
Status validate_rules(std::span<const Rule> rules);

// Defaults for the built-in rules.
struct BuiltinLimits {
  double gpu_temp_c = 85;
  int64_t gpu_temp_for_ms = 60'000;
  int64_t gpu_missing_for_ms = 30'000;
  double heartbeat_timeout_s = 10;
  double clock_skew_ms = 2'000;
  double idle_util_percent = 5;
  int64_t idle_for_ms = 30 * 60'000;
  double benchmark_shortfall_percent = 10;
};
// gpu_temperature_high, gpu_xid_error, gpu_ecc_double_bit, gpu_missing, gpu_benchmark_slow,
// node_heartbeat_lost, agent_clock_skew, instance_idle (all instances; notify only).
std::vector<Rule> builtin_rules(const BuiltinLimits& limits = {});
// A tenant's idle rule for one instance, named "instance_idle.<instance_id>".
Rule idle_rule(std::string_view instance_id, double below_percent, int64_t for_ms, bool auto_stop);

struct Observation {
  Signal signal;
  std::string subject;          // GPU uuid, node id or instance id, as the signal says
  std::string node;             // the subject's node (its own id for node signals)
  std::string gpu_type;         // catalog slug of the subject's GPUs; may be empty
  std::string instance;         // the instance on the GPU, or the instance itself; may be empty
  std::string tenant;           // the instance's tenant; may be empty
  std::optional<double> value;  // none: the series is missing
};

// An observation as evaluate() reads it, without owning its strings: a fleet of 10,000 nodes makes
// hundreds of thousands of observations per evaluation, nearly all of them of nothing wrong, and
// copying five strings into each cost more than evaluating them. The strings must outlive the
// evaluate() call; they are copied into an Observation only for the alerts that hold.
struct ObservationRef {
  Signal signal;
  std::string_view subject;
  std::string_view node;
  std::string_view gpu_type;
  std::string_view instance;
  std::string_view tenant;
  std::optional<double> value;

  static ObservationRef of(const Observation& observation);
  Observation owned() const;
};

enum class AlertState : uint8_t { kInactive, kPending, kFiring, kResolved };
std::string_view to_string(AlertState state);

struct Alert {
  std::string rule;
  Severity severity = Severity::kWarning;
  AlertState state = AlertState::kPending;  // kPending or kFiring
  Observation subject;                      // the latest observation (value: the latest value)
  int64_t active_since_ms = 0;              // when the condition became true
  int64_t fired_at_ms = 0;                  // 0 while pending
  bool acknowledged = false;
  std::string acknowledged_by;
  int64_t acknowledged_at_ms = 0;
  bool auto_stop = false;  // from the rule's idle policy: the controller stops the instance
};

struct Transition {
  std::string rule;
  Severity severity = Severity::kWarning;
  AlertState from = AlertState::kInactive;
  AlertState to = AlertState::kPending;
  int64_t at_ms = 0;
  Observation subject;  // as last observed (for a resolution by absence: as last seen)
  bool auto_stop = false;
};

struct EvaluatorOptions {
  size_t history_limit = 1'000;  // the oldest transitions are dropped beyond it
};

class Evaluator {
 public:
  explicit Evaluator(EvaluatorOptions options = {}) : options_(options) {}

  // Replaces the rules after validate_rules(); on error nothing changes. Alerts of rules that
  // keep their name keep their state; the others resolve at the next evaluation.
  Status set_rules(std::vector<Rule> rules);
  const std::vector<Rule>& rules() const { return rules_; }

  // One observation per (signal, subject); `now_ms` must not go backwards (an earlier time is
  // treated as equal to the last one).
  // Cost: one pass over the observations to group them by signal, then one pass per rule over
  // its signal's group; a lookup of the alert only for observations that satisfy the rule or
  // while any alert exists.
  std::vector<Transition> evaluate(int64_t now_ms, std::span<const ObservationRef> observations);
  std::vector<Transition> evaluate(int64_t now_ms, std::span<const Observation> observations);

  // Pending and firing alerts, by rule name then subject.
  std::vector<Alert> active() const;
  // Oldest first, at most history_limit.
  const std::deque<Transition>& history() const { return history_; }

  // kNotFound "alert_not_found" when (rule, subject) is not pending or firing. Acknowledging
  // again keeps the first acknowledgement; a resolved alert that fires again starts unacknowledged.
  Status acknowledge(std::string_view rule, std::string_view subject, std::string_view by,
                     int64_t now_ms);

 private:
  using Key = std::pair<std::string, std::string>;  // (rule name, subject)
  using KeyView = std::pair<std::string_view, std::string_view>;
  // Lets lookups by KeyView avoid building strings.
  struct KeyLess {
    using is_transparent = void;
    static KeyView view(const Key& key) { return {key.first, key.second}; }
    static KeyView view(const KeyView& key) { return key; }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return view(a) < view(b);
    }
  };

  // An alert with the evaluation that last observed its subject: one that an evaluation did not
  // observe resolves at its end.
  struct Tracked {
    Alert alert;
    uint64_t observed_in = 0;
  };

  void record(std::vector<Transition>& out, Transition transition);

  EvaluatorOptions options_;
  std::vector<Rule> rules_;
  std::map<Key, Tracked, KeyLess> alerts_;
  uint64_t evaluations_ = 0;
  std::deque<Transition> history_;
  int64_t last_now_ms_ = 0;
};

}  // namespace gpurent::monitor
