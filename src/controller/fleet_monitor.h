// The controller's monitoring (monitoring.h has its types and docs/monitoring.md the design): the
// GPU series (a SeriesFeed, which the host may feed from its telemetry thread), the alert rules
// (built-in, the config file's, the API's), their evaluation on tick, the bounded alert history
// and acknowledgements.
//
// What the rules watch comes from the controller, which owns the fleet: tick() asks `observe` for
// it when an evaluation is due. Firing and resolution are events (EventLog) and history records
// (the pending ChangeSet's monitoring_changes, sent by webhook once durable).
//
// Invariants: rule names are unique across built-in, config and API rules; history seq is dense
// and the history holds at most kMaxAlertHistory records.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "controller/change_set.h"
#include "controller/event_log.h"
#include "controller/monitoring.h"
#include "controller/series_feed.h"
#include "model/tenant.h"
#include "monitor/alerts.h"

namespace gpurent::controller {

class FleetMonitor {
 public:
  struct Context {
    const Clock& clock;
    ChangeSet& changes;
    EventLog& events;
    Millis heartbeat_timeout;  // the built-in node_heartbeat_lost rule's
    Millis clock_skew_limit;   // the built-in agent_clock_skew rule's
    // The host persists the rollup rows itself (ControllerOptions::series_fed_by_host).
    bool series_fed_by_host = false;
  };
  explicit FleetMonitor(Context context) : c_(context) {}

  Status restore(MonitoringSnapshot& snapshot);
  // The GPU series; thread-safe (series_feed.h).
  SeriesFeed& series() { return series_; }
  const SeriesFeed& series() const { return series_; }
  // Moves the rollup rows the series completed into the pending changes (a bounded slice a
  // call), unless the host persists them.
  void collect_rollups();

  // The config file's alert rules (at start). kInvalidArgument as monitor::validate_rules, and
  // "duplicate_rule_name" when one has an API rule's name.
  Status set_config_rules(std::vector<monitor::Rule> rules);
  // Operators: every rule in force (built-in, config, API).
  Result<std::vector<monitor::Rule>> rules(const model::Principal& caller) const;
  // Operators (or the platform, for a tenant's idle rule): sets an API rule (kConflict
  // "rule_not_editable" for a built-in or config rule; at most kMaxApiAlertRules).
  Result<monitor::Rule> put_rule(const model::Principal& caller, monitor::Rule rule);
  Status delete_rule(const model::Principal& caller, std::string_view name);
  // The metrics some rule watches, sorted.
  std::vector<monitor::Metric> watched_metrics() const;

  // Operators: all; tenants: their instances' idle alerts. History: at most `history_limit`.
  AlertList alerts(const model::Principal& caller, size_t history_limit) const;
  // id: "<rule>:<subject>" (alert_id). kNotFound "alert_not_found" when not active or not the
  // caller's.
  Status acknowledge(const model::Principal& caller, std::string_view id);
  static std::string alert_id(std::string_view rule, std::string_view subject);
  // Firing alerts by severity (every severity, 0 included), for /metrics.
  std::map<std::string, int> firing_by_severity() const;

  // Compacts the series and collects rollups; evaluates the rules when kAlertEvaluationInterval
  // has passed, over what `observe` puts in its (emptied) vector. Returns the transitions that
  // fired a rule with auto_stop, for the controller to stop their instances.
  using Observe = std::function<void(std::vector<monitor::ObservationRef>&,
                                     const std::vector<monitor::Metric>&)>;
  std::vector<monitor::Transition> tick(const Observe& observe);

 private:
  Timestamp now() const { return c_.clock.now(); }
  std::vector<monitor::Rule> rules_in_force() const;
  void rebuild_rules();
  // Records a transition (history, changes, and an event when it fires or resolves).
  void record(const monitor::Transition& transition);
  // Sets the ack of the alert's latest history record (if it has none) and queues its rewrite.
  void record_acknowledgement(std::string_view rule, std::string_view subject, const AlertAck& ack);
  // Re-applies the restored acknowledgements whose alerts are active again (monitoring.h).
  void reapply_restored_acks();

  Context c_;
  SeriesFeed series_;
  monitor::Evaluator evaluator_;
  std::vector<monitor::Rule> config_rules_;
  std::map<std::string, monitor::Rule, std::less<>> api_rules_;
  bool rules_changed_ = true;  // the evaluator's rules must be rebuilt
  std::deque<AlertRecord> history_;
  int64_t last_history_seq_ = 0;
  Timestamp last_evaluation_{};
  Timestamp last_compaction_{};
  // The last evaluation's observations, emptied and refilled by the next: its capacity is kept
  // (a fresh buffer's page faults and growth cost more than refilling it; bench/RESULTS.md).
  std::vector<monitor::ObservationRef> observed_;
  // Acknowledgements of alerts that were active when the state was persisted, waiting for their
  // alert to be active again (until restored_acks_until_).
  struct RestoredAck {
    std::string rule;
    std::string subject;
    AlertAck ack;
  };
  std::vector<RestoredAck> restored_acks_;
  Timestamp restored_acks_until_{};
};

}  // namespace gpurent::controller
