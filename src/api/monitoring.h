// The API's bodies for monitoring (docs/api.md "Metrics and alerts"; docs/openapi.json components
// of the same names): alert rules, alerts and their history, and metric series, as
// api/workloads.h says of instances. monitor/alerts_json.h keeps the store's form of rules and
// transitions; the server shows them in these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/json_form.h"
#include "common/clock.h"
#include "common/field_table.h"

namespace gpurent::api {

// An alert rule: GET /v1/alerts/rules lists them, POST saves one (AlertRuleCreate's members).
struct AlertRule {
  std::string name;
  std::string metric;      // a GPU metric (short or DCGM name), node_heartbeat_age_s, ...
  std::string comparison;  // ">", ">=", "<", "<=", "==", "!=" or "absent"
  double threshold = 0;
  double for_s = 0;
  std::string severity;                    // info, warning or critical
  std::string scope;                       // all, node, gpu_type or instance
  std::optional<std::string> scope_value;  // what the scope names; absent for "all"
  std::optional<bool> idle_auto_stop;      // instance_gpu_util only: an idle rule, stopping or not
};

template <class V, schema::Of<AlertRule> S>
void fields(V& visit, S& x) {
  visit("name", x.name);
  visit("metric", x.metric);
  visit("comparison", x.comparison);
  visit("threshold", x.threshold);
  visit("for_s", x.for_s);
  visit("severity", x.severity);
  visit("scope", x.scope);
  visit("scope_value", x.scope_value, schema::kOmitEmpty);
  visit("idle_auto_stop", x.idle_auto_stop, schema::kOmitEmpty);
}

// POST /v1/alerts/rules (operators): a rule; what is left out takes its default.
struct AlertRuleCreate {
  std::string name;
  std::string metric;
  std::string comparison;
  std::optional<double> threshold;  // required unless comparison is "absent"
  std::optional<double> for_s;
  std::optional<std::string> severity;  // default warning
  std::optional<std::string> scope;     // default all
  std::optional<std::string> scope_value;
  std::optional<bool> idle_auto_stop;
};

template <class V, schema::Of<AlertRuleCreate> S>
void fields(V& visit, S& x) {
  visit("name", x.name);
  visit("metric", x.metric);
  visit("comparison", x.comparison);
  visit("threshold", x.threshold, schema::kOmitEmpty);
  visit("for_s", x.for_s, schema::kOmitEmpty);
  visit("severity", x.severity, schema::kOmitEmpty);
  visit("scope", x.scope, schema::kOmitEmpty);
  visit("scope_value", x.scope_value, schema::kOmitEmpty);
  visit("idle_auto_stop", x.idle_auto_stop, schema::kOmitEmpty);
}

// PUT /v1/instances/{id}/idle-alert: alert (and optionally stop) when the instance's GPUs stay
// below a utilisation.
struct IdleAlertSet {
  std::optional<double> below_percent;  // default 5
  std::optional<int64_t> for_s;         // default 1800, at least 60
  std::optional<bool> auto_stop;        // default false
};

template <class V, schema::Of<IdleAlertSet> S>
void fields(V& visit, S& x) {
  visit("below_percent", x.below_percent, schema::kOmitEmpty);
  visit("for_s", x.for_s, schema::kOmitEmpty);
  visit("auto_stop", x.auto_stop, schema::kOmitEmpty);
}

// What an alert is about: the metric and the subject it was read from.
struct AlertSubject {
  std::string metric;
  std::string subject;  // a GPU's uuid, a node's id or an instance's id
  std::string node;
  std::string gpu_type;
  std::string instance;
  std::string tenant;
  std::optional<double> value;  // null: the metric was absent
};

template <class V, schema::Of<AlertSubject> S>
void fields(V& visit, S& x) {
  visit("metric", x.metric);
  visit("subject", x.subject);
  visit("node", x.node);
  visit("gpu_type", x.gpu_type);
  visit("instance", x.instance);
  visit("tenant", x.tenant);
  visit("value", x.value);
}

// An alert pending or firing now.
struct Alert {
  std::string id;
  std::string rule;
  std::string severity;
  std::string state;  // pending or firing
  AlertSubject subject;
  Timestamp active_since{};
  std::optional<Timestamp> fired_at;
  bool acknowledged = false;
  std::optional<std::string> acknowledged_by;
  std::optional<Timestamp> acknowledged_at;
  bool auto_stop = false;  // firing stops the instance
};

template <class V, schema::Of<Alert> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("rule", x.rule);
  visit("severity", x.severity);
  visit("state", x.state);
  visit("subject", x.subject);
  visit("active_since", x.active_since);
  visit("fired_at", x.fired_at);
  visit("acknowledged", x.acknowledged);
  visit("acknowledged_by", x.acknowledged_by);
  visit("acknowledged_at", x.acknowledged_at);
  visit("auto_stop", x.auto_stop);
}

// A change of an alert's state, as the history keeps it.
struct AlertTransition {
  int64_t seq = 0;
  std::string id;  // the alert's
  std::string rule;
  std::string severity;
  std::string from;  // inactive, pending, firing or resolved
  std::string to;
  Timestamp at{};
  AlertSubject subject;
  bool auto_stop = false;
};

template <class V, schema::Of<AlertTransition> S>
void fields(V& visit, S& x) {
  visit("seq", x.seq);
  visit("id", x.id);
  visit("rule", x.rule);
  visit("severity", x.severity);
  visit("from", x.from);
  visit("to", x.to);
  visit("at", x.at);
  visit("subject", x.subject);
  visit("auto_stop", x.auto_stop);
}

// GET /v1/alerts: what is active, and the recent history.
struct AlertList {
  std::vector<Alert> items;
  std::vector<AlertTransition> history;
};

template <class V, schema::Of<AlertList> S>
void fields(V& visit, S& x) {
  visit("items", x.items);
  visit("history", x.history);
}

// POST /v1/alerts/{id}/ack.
struct AlertAcknowledged {
  std::string id;
  bool acknowledged = true;
};

template <class V, schema::Of<AlertAcknowledged> S>
void fields(V& visit, S& x) {
  visit("id", x.id);
  visit("acknowledged", x.acknowledged);
}

// A point of a metric series; series numbers the GPU (in MetricSeries::gpus) it belongs to.
struct MetricPoint {
  Timestamp t{};
  double value = 0;
  int64_t series = 0;
};

template <class V, schema::Of<MetricPoint> S>
void fields(V& visit, S& x) {
  visit("t", x.t);
  visit("value", x.value);
  visit("series", x.series);
}

// GET /v1/metrics/query: a metric of a GPU, a node's GPUs or an instance's GPUs over time.
struct MetricSeries {
  std::string metric;
  std::string dcgm_name;
  std::string unit;
  std::string aggregation;  // of each step: avg, max, min or sum
  std::string resolution;   // raw, minute or hour
  double step_s = 0;
  std::vector<std::string> gpus;
  std::vector<MetricPoint> points;
};

template <class V, schema::Of<MetricSeries> S>
void fields(V& visit, S& x) {
  visit("metric", x.metric);
  visit("dcgm_name", x.dcgm_name);
  visit("unit", x.unit);
  visit("aggregation", x.aggregation);
  visit("resolution", x.resolution);
  visit("step_s", x.step_s);
  visit("gpus", x.gpus);
  visit("points", x.points);
}

}  // namespace gpurent::api
