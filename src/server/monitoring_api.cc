#include "server/monitoring_api.h"

#include <charconv>
#include <cmath>

#include "api/monitoring.h"
#include "server/api_http.h"

namespace gpurent::server {
namespace {

using monitor::Exposition;
using monitor::Labels;

Error invalid_query(std::string_view name, std::string_view why) {
  return Error::invalid("invalid_query", fmt::format("query parameter '{}' {}", name, why));
}

std::optional<std::string> param(const std::map<std::string, std::string>& query,
                                 const std::string& name) {
  const auto it = query.find(name);
  if (it == query.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> parse_int(std::string_view text) {
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

// RFC 3339, or whole Unix seconds.
Result<std::optional<int64_t>> time_param(const std::map<std::string, std::string>& query,
                                          const std::string& name) {
  const auto text = param(query, name);
  if (!text) return std::optional<int64_t>();
  if (auto seconds = parse_int(*text); seconds && *seconds >= 0 && *seconds < (int64_t{1} << 40)) {
    return std::optional<int64_t>(*seconds * 1000);
  }
  if (auto t = parse_rfc3339(*text)) return std::optional<int64_t>(to_unix_ms(*t));
  return fail(invalid_query(name, "must be an RFC 3339 time or Unix seconds"));
}

// Seconds, or a number with a unit (s, m, h, d).
Result<int64_t> step_param(const std::map<std::string, std::string>& query) {
  const auto text = param(query, "step");
  if (!text) return monitor::kMinuteMs;
  std::string_view number = *text;
  int64_t unit_ms = 1000;
  switch (number.back()) {
    case 's':
      unit_ms = 1000;
      break;
    case 'm':
      unit_ms = 60'000;
      break;
    case 'h':
      unit_ms = 3'600'000;
      break;
    case 'd':
      unit_ms = 86'400'000;
      break;
    default:
      unit_ms = 0;
  }
  if (unit_ms != 0) {
    number.remove_suffix(1);
  } else {
    unit_ms = 1000;
  }
  const auto value = parse_int(number);
  if (!value || *value < 1 || *value > 366LL * 86'400) {
    return fail(invalid_query("step", "must be a positive duration such as 60, 60s, 5m or 1h"));
  }
  return *value * unit_ms;
}

}  // namespace

Result<controller::MetricsQuery> parse_metrics_query(
    const std::map<std::string, std::string>& query) {
  for (const auto& [key, value] : query) {
    static constexpr std::array<std::string_view, 9> kKnown = {
        "metric", "gpu", "node", "instance", "from", "to", "step", "agg", "resolution"};
    if (std::find(kKnown.begin(), kKnown.end(), key) == kKnown.end()) {
      return fail(invalid_query(key, "is not known"));
    }
  }
  controller::MetricsQuery out;
  const auto metric = param(query, "metric");
  if (!metric) return fail(invalid_query("metric", "is required"));
  const auto parsed_metric = monitor::parse_metric(*metric);
  if (!parsed_metric) return fail(invalid_query("metric", fmt::format("'{}' is unknown", *metric)));
  out.metric = *parsed_metric;
  out.gpu = param(query, "gpu");
  out.node = param(query, "node");
  out.instance = param(query, "instance");
  const int subjects =
      int(out.gpu.has_value()) + int(out.node.has_value()) + int(out.instance.has_value());
  if (subjects != 1) {
    return fail(Error::invalid("invalid_query", "give exactly one of gpu, node or instance"));
  }
  GPURENT_TRY(to, time_param(query, "to"));
  GPURENT_TRY(from, time_param(query, "from"));
  out.to_ms = to;
  out.from_ms = from;
  GPURENT_TRY(step, step_param(query));
  out.step_ms = step;
  if (const auto agg = param(query, "agg")) {
    const auto parsed = monitor::parse_aggregation(*agg);
    if (!parsed) return fail(invalid_query("agg", "must be avg, max, min or sum"));
    out.aggregation = *parsed;
  }
  if (const auto resolution = param(query, "resolution")) {
    const auto parsed = monitor::parse_resolution(*resolution);
    if (!parsed) return fail(invalid_query("resolution", "must be raw, minute or hour"));
    out.resolution = parsed;
  }
  return out;
}

Json metrics_answer_view(const controller::MetricsQuery& query,
                         const controller::MetricsAnswer& answer) {
  const auto& info = monitor::metric_info(query.metric);
  api::MetricSeries view{.metric = std::string(info.name),
                         .dcgm_name = std::string(info.dcgm_name),
                         .unit = std::string(info.unit),
                         .aggregation = std::string(monitor::to_string(query.aggregation)),
                         .resolution = std::string(monitor::to_string(answer.result.resolution)),
                         .step_s = static_cast<double>(answer.result.step_ms) / 1000.0,
                         .gpus = answer.gpus};
  view.points.reserve(answer.result.points.size());
  for (const auto& point : answer.result.points) {
    view.points.push_back({.t = from_unix_ms(point.t_ms),
                           .value = point.value,
                           .series = static_cast<int64_t>(point.series)});
  }
  return view;
}

api::AlertRule rule_view(const monitor::Rule& rule) {
  api::AlertRule view{.name = rule.name,
                      .metric = std::string(monitor::signal_name(rule.signal)),
                      .comparison = std::string(monitor::to_string(rule.comparison)),
                      .threshold = rule.threshold,
                      .for_s = static_cast<double>(rule.for_ms) / 1000.0,
                      .severity = std::string(monitor::to_string(rule.severity)),
                      .scope = std::string(monitor::to_string(rule.scope.kind))};
  if (rule.scope.kind != monitor::Scope::Kind::kAll) view.scope_value = rule.scope.value;
  if (rule.idle) view.idle_auto_stop = rule.idle->auto_stop;
  return view;
}

Json rule_list_view(const std::vector<monitor::Rule>& rules) {
  Json items = Json::array();
  for (const auto& rule : rules) items.push_back(rule_view(rule));
  return whole_list(std::move(items));
}

namespace {

api::AlertSubject subject_view(const monitor::Observation& o) {
  return {.metric = std::string(monitor::signal_name(o.signal)),
          .subject = o.subject,
          .node = o.node,
          .gpu_type = o.gpu_type,
          .instance = o.instance,
          .tenant = o.tenant,
          .value = o.value};
}

api::AlertTransition transition_view(const controller::AlertRecord& record) {
  const monitor::Transition& t = record.transition;
  return {.seq = record.seq,
          .id = controller::FleetMonitor::alert_id(t.rule, t.subject.subject),
          .rule = t.rule,
          .severity = std::string(monitor::to_string(t.severity)),
          .from = std::string(monitor::to_string(t.from)),
          .to = std::string(monitor::to_string(t.to)),
          .at = from_unix_ms(t.at_ms),
          .subject = subject_view(t.subject),
          .auto_stop = t.auto_stop};
}

// Unset times are 0 in the monitor.
std::optional<Timestamp> time_unless_zero(int64_t ms) {
  return ms == 0 ? std::nullopt : std::optional<Timestamp>(from_unix_ms(ms));
}

}  // namespace

Json alert_record_view(const controller::AlertRecord& record) { return transition_view(record); }

Json alert_list_view(const controller::AlertList& list) {
  api::AlertList view;
  view.items.reserve(list.active.size());
  for (const auto& alert : list.active) {
    view.items.push_back(
        {.id = controller::FleetMonitor::alert_id(alert.rule, alert.subject.subject),
         .rule = alert.rule,
         .severity = std::string(monitor::to_string(alert.severity)),
         .state = std::string(monitor::to_string(alert.state)),
         .subject = subject_view(alert.subject),
         .active_since = from_unix_ms(alert.active_since_ms),
         .fired_at = time_unless_zero(alert.fired_at_ms),
         .acknowledged = alert.acknowledged,
         .acknowledged_by =
             alert.acknowledged ? std::optional(alert.acknowledged_by) : std::nullopt,
         .acknowledged_at = time_unless_zero(alert.acknowledged_at_ms),
         .auto_stop = alert.auto_stop});
  }
  for (const auto* record : list.history) view.history.push_back(transition_view(*record));
  return view;
}

Result<IdleAlertRequest> parse_idle_alert(const Json& body) {
  for (const auto& [key, value] : body.items()) {
    if (key != "below_percent" && key != "for_s" && key != "auto_stop") {
      return fail(Error::invalid("unknown_field", fmt::format("unknown field '{}'", key)));
    }
  }
  IdleAlertRequest out;
  if (const auto it = body.find("below_percent"); it != body.end()) {
    if (!it->is_number() || it->get<double>() <= 0 || it->get<double>() > 100) {
      return fail(invalid_field("below_percent", "must be a number in (0, 100]"));
    }
    out.below_percent = it->get<double>();
  }
  GPURENT_TRY(for_s, optional_int(body, "for_s", 60, monitor::kMaxRuleForMs / 1000));
  if (for_s) out.for_ms = *for_s * 1000;
  GPURENT_TRY(auto_stop, optional_bool(body, "auto_stop"));
  out.auto_stop = auto_stop.value_or(false);
  return out;
}

void RequestMetrics::observe(std::string_view method, std::string_view route, int status,
                             std::chrono::microseconds latency) {
  const std::string status_class = fmt::format("{}xx", status / 100);
  monitor::LatencyHistogram* histogram = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto& slot = histograms_[Key(method, route, status_class)];
    if (!slot) slot = std::make_unique<monitor::LatencyHistogram>();
    histogram = slot.get();
  }
  histogram->observe(latency);
}

void RequestMetrics::expose(Exposition& exposition) const {
  std::lock_guard lock(mutex_);
  for (const auto& [key, histogram] : histograms_) {
    const auto& [method, route, status_class] = key;
    (void)exposition.histogram("gpurent_http_request_duration_seconds",
                               "API request latency by route pattern and status class",
                               {{"method", method}, {"route", route}, {"code", status_class}},
                               histogram->snapshot());
  }
}

std::string render_metrics(const controller::Controller& controller,
                           const RequestMetrics& requests) {
  Exposition out;
  const auto readings = controller.fleet().gpu_readings();
  (void)monitor::add_gpu_families(out, readings);
  const auto stats = controller.fleet().platform_stats();
  // The names below are fixed and valid, so the Exposition's errors cannot happen.
  for (const auto& [status, count] : stats.nodes_by_status) {
    (void)out.gauge("gpurent_nodes", "Nodes by status", {{"status", status}}, count);
  }
  for (const auto& [state, count] : stats.instances_by_state) {
    (void)out.gauge("gpurent_instances", "Instances by state", {{"state", state}}, count);
  }
  (void)out.gauge("gpurent_queue_length", "Pending instances waiting to be placed", {},
                  stats.queue_length);
  (void)out.counter("gpurent_scheduler_requests_tried_total",
                    "Queued requests the scheduling passes tried to place", {},
                    static_cast<double>(stats.scheduling_requests_tried));
  for (const auto& [severity, count] : stats.alerts_firing) {
    (void)out.gauge("gpurent_alerts_firing", "Firing alerts by severity", {{"severity", severity}},
                    count);
  }
  for (const auto& [gpu_type, price] : stats.price_per_gpu_hour) {
    (void)out.gauge("gpurent_gpu_price_per_hour", "On-demand price of one GPU for one hour",
                    {{"gpu_type", gpu_type}, {"currency", controller.options().currency}}, price);
  }
  const Timestamp now = controller.pricing().now();
  for (const auto& [gpu_type, on_demand] : stats.price_per_gpu_hour) {
    const auto spot =
        controller.pricing().spot_market().price_at(controller.pricing().book(), gpu_type, now);
    if (!spot) continue;
    (void)out.gauge("gpurent_gpu_spot_price_per_hour", "Spot price of one GPU for one hour",
                    {{"gpu_type", gpu_type}, {"currency", controller.options().currency}},
                    static_cast<double>(*spot) / static_cast<double>(kMicrosPerUnit));
  }
  (void)out.counter("gpurent_telemetry_samples_total", "GPU samples received",
                    {{"outcome", "accepted"}}, static_cast<double>(stats.samples_accepted));
  (void)out.counter("gpurent_telemetry_samples_total", "GPU samples received",
                    {{"outcome", "refused"}}, static_cast<double>(stats.samples_refused));
  for (const auto& skew : stats.clock_skews) {
    (void)out.gauge("gpurent_node_clock_skew_seconds",
                    "The node agent's clock minus the server's, at its latest report",
                    {{"node", skew.node_id}, {"Hostname", skew.node_name}}, skew.seconds);
  }
  (void)out.gauge("gpurent_series_memory_bytes", "Memory held by the GPU series store", {},
                  static_cast<double>(stats.series_memory.total_bytes));
  requests.expose(out);
  return out.render();
}

}  // namespace gpurent::server
