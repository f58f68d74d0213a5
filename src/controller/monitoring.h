// The controller's monitoring: GPU telemetry in a monitor::SeriesStore, alert rules evaluated by a
// monitor::Evaluator, and what of it is persisted (docs/monitoring.md, "In the server").
//
// - Samples come in through the SeriesFeed (series_feed.h): from the agent's report, on the
// server's
//   telemetry thread or through Controller::apply_report, or through ingest_gpu_samples; GPUs that
//   are not the node's are skipped and counted.
// - tick() compacts the store every kCompactionInterval and evaluates the alert rules every
//   kAlertEvaluationInterval, with time from the Clock only.
// - Rules: the built-in ones (monitor::builtin_rules, the heartbeat timeout from the controller's
//   options), the config file's (set once at start, not persisted: the file is their home), and
//   the API's (operators' rules and tenants' per-instance idle rules, persisted). Names are
//   unique across the three.
// - A node's heartbeat age is observed from its state: a node that is not down never shows an age
//   above the timeout, so node_heartbeat_lost fires exactly for down nodes. A GPU is observed
//   once it has reported a sample, and not while its node is down (the node's alert says it).
// - Each firing and each resolution of a firing alert is an event (record_event; tenant "" for
//   platform alerts, the instance's tenant for idle alerts) and an AlertRecord in the persisted,
//   bounded history and in ChangeSet::alert_notifications (sent by webhook once durable). An idle
//   alert whose rule says auto_stop stops the instance through the normal stop path.
// - Acknowledgements live in the evaluator and on the alert's latest history record (AlertRecord::
//   ack, persisted with it; a pending alert's ack is copied onto its firing record). After a
//   restart the evaluator starts empty and the alert becomes pending (or firing) again from new
//   observations; the ack of each alert whose latest persisted record was pending or firing is
//   re-applied, with its original author and time, once that alert is active again within
//   kRestoredAckWindow of the restart (and its new records carry it). One that does not come back
//   by then is dropped: its condition cleared while the server was down. The price: a condition
//   that cleared during the downtime and came back within the window keeps the old ack.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "controller/series_feed.h"
#include "monitor/alerts.h"
#include "monitor/prometheus.h"
#include "monitor/series_store.h"

namespace gpurent::controller {

inline constexpr Millis kAlertEvaluationInterval{5'000};
inline constexpr Millis kCompactionInterval{60'000};
// A GPU's latest sample older than this is missing (alerts) or left out (/metrics).
inline constexpr int64_t kSampleMaxAgeMs = 60'000;
// How long after a restart a persisted acknowledgement waits for its alert to be active again (the
// heartbeat timeout's grace and the first reports come well within it).
inline constexpr Millis kRestoredAckWindow{10 * 60'000};
// Transitions kept in memory and in the store, the oldest dropped first.
inline constexpr size_t kMaxAlertHistory = 1'000;
// Operators' and tenants' rules together.
inline constexpr size_t kMaxApiAlertRules = 1'000;
// Rollup rows a tick (or report) puts in the ChangeSet, when the controller persists them itself
// (not in the server: store::RollupWriter): a minute boundary completes 12 rows per GPU (a
// million at 80,000 GPUs), and one commit of them all would hold up every acknowledgement for
// seconds. 25,000 a second outpaces the 16,000 a second that makes.
inline constexpr size_t kMaxRollupRowsPerCommit = 25'000;

struct AlertAck {
  std::string by;  // the API key id
  int64_t at_ms = 0;
  bool operator==(const AlertAck&) const = default;
};

// One alert transition as recorded: seq is dense and increasing. ack: set on the latest record of
// a pending or firing alert when it is acknowledged (the record is then rewritten in the store).
struct AlertRecord {
  int64_t seq = 0;
  monitor::Transition transition;
  std::optional<AlertAck> ack;
};

// An API rule set (rule) or deleted (nullopt), in the order it happened.
struct AlertRuleChange {
  std::string name;
  std::optional<monitor::Rule> rule;
};

// Rollup rows older than these are past retention and may be deleted from the store.
struct RollupPrune {
  int64_t minute_before_ms = 0;
  int64_t hour_before_ms = 0;
};

struct MonitoringSnapshot {
  std::vector<monitor::RollupRow> rollups;
  std::vector<monitor::Rule> alert_rules;  // the API's
  std::vector<AlertRecord> alert_history;  // oldest first
};

struct MonitoringChanges {
  std::vector<monitor::RollupRow> rollups;
  std::optional<RollupPrune> prune;
  std::vector<AlertRuleChange> rule_changes;
  std::vector<AlertRecord> alert_history;  // appended; the store keeps the last kMaxAlertHistory
  std::vector<AlertRecord> acknowledged;   // records already appended whose ack was set since

  bool empty() const {
    return rollups.empty() && !prune && rule_changes.empty() && alert_history.empty() &&
           acknowledged.empty();
  }
  void merge(MonitoringChanges&& other);
};

// GET /v1/metrics/query, already parsed. Exactly one of gpu, node, instance.
struct MetricsQuery {
  monitor::Metric metric = monitor::Metric::kGpuUtil;
  std::optional<std::string> gpu;
  std::optional<std::string> node;
  std::optional<std::string> instance;
  std::optional<int64_t> from_ms;  // default: an hour before to_ms
  std::optional<int64_t> to_ms;    // default: now
  int64_t step_ms = monitor::kMinuteMs;
  monitor::Aggregation aggregation = monitor::Aggregation::kAvg;
  std::optional<monitor::Resolution> resolution;
};

struct MetricsAnswer {
  std::vector<std::string> gpus;  // the series aggregated
  monitor::QueryResult result;
};

struct AlertList {
  std::vector<monitor::Alert> active;       // pending and firing
  std::vector<const AlertRecord*> history;  // newest last
};

struct NodeClockSkew {
  std::string node_id;
  std::string node_name;
  double seconds = 0;  // agent clock - server clock (Controller::node_clock_skew_ms)
};

// What /metrics says about the platform besides the GPUs.
struct PlatformStats {
  std::map<std::string, int> nodes_by_status;     // every status, 0 included
  std::map<std::string, int> instances_by_state;  // every state, 0 included
  int queue_length = 0;                           // pending instances
  uint64_t scheduling_requests_tried = 0;         // requests the scheduling passes tried to place
  std::map<std::string, int> alerts_firing;       // by severity, 0 included
  std::map<std::string, double> price_per_gpu_hour;  // on-demand, by GPU type, currency units
  uint64_t samples_accepted = 0;
  uint64_t samples_refused = 0;  // out of order, too late, or of a GPU not the node's
  monitor::MemoryStats series_memory;
  std::vector<NodeClockSkew> clock_skews;  // by node id; nodes whose skew is known
};

}  // namespace gpurent::controller
