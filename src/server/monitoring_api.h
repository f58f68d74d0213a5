// The HTTP side of monitoring (docs/api.md, "Metrics and alerts"): parsing the metrics query and
// the alert bodies, the JSON views, the API latency histograms, and the Prometheus exposition of
// GET /metrics. The routes themselves are registered in api_fleet.cc (add_monitoring_routes).
//
// Thread-safety: RequestMetrics is thread-safe (a mutex around its map, lock-free histograms);
// the rest is pure, or reads the controller on its owner's thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

#include "api/monitoring.h"
#include "common/json.h"
#include "common/result.h"
#include "controller/controller.h"
#include "monitor/prometheus.h"

namespace gpurent::server {

// GET /v1/metrics/query's parameters: metric (short or DCGM name), exactly one of gpu, node or
// instance, from and to (RFC 3339 or Unix seconds; default: the last hour), step (seconds, or a
// number with s, m, h or d; default 60 s), agg (avg, max, min, sum), resolution (raw, minute,
// hour; default: chosen by the range). 400 "invalid_query" names the bad parameter.
Result<controller::MetricsQuery> parse_metrics_query(
    const std::map<std::string, std::string>& query);
Json metrics_answer_view(const controller::MetricsQuery& query,
                         const controller::MetricsAnswer& answer);

// A rule as the API shows it: what monitor::rule_to_json (the store's form) writes, member for
// member (monitoring_api_test holds them together).
api::AlertRule rule_view(const monitor::Rule& rule);
Json rule_list_view(const std::vector<monitor::Rule>& rules);
Json alert_list_view(const controller::AlertList& list);
Json alert_record_view(const controller::AlertRecord& record);

// PUT /v1/instances/{id}/idle-alert: {"below_percent": 5, "for_s": 1800, "auto_stop": false}.
struct IdleAlertRequest {
  double below_percent = 5;
  int64_t for_ms = 30 * 60'000;
  bool auto_stop = false;
};
Result<IdleAlertRequest> parse_idle_alert(const Json& body);

// API latency by (method, route pattern, status class).
class RequestMetrics {
 public:
  void observe(std::string_view method, std::string_view route, int status,
               std::chrono::microseconds latency);
  void expose(monitor::Exposition& exposition) const;

 private:
  using Key = std::tuple<std::string, std::string, std::string>;
  mutable std::mutex mutex_;
  std::map<Key, std::unique_ptr<monitor::LatencyHistogram>, std::less<>> histograms_;
};

// The whole /metrics page.
std::string render_metrics(const controller::Controller& controller,
                           const RequestMetrics& requests);

}  // namespace gpurent::server
