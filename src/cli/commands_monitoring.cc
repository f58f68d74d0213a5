// alerts and metrics: alerts and their rules, and GPU telemetry queries (docs/api.md, "Metrics
// and alerts").
#include <CLI/App.hpp>
#include <memory>

#include "api/monitoring.h"
#include "cli/commands.h"
#include "cli/commands_monitoring.h"
#include "cli/output.h"

namespace gpurent::cli {
namespace {

std::string alerts_view(const api::AlertList& list) {
  Table table({"ID", "STATE", "SEVERITY", "SINCE", "VALUE", "ACK"});
  for (const auto& alert : list.items) {
    const auto& value = alert.subject.value;
    table.add_row({alert.id, alert.state, alert.severity, format_rfc3339(alert.active_since),
                   value ? fmt::format("{}", *value) : "-",
                   alert.acknowledged ? alert.acknowledged_by.value_or("-") : ""});
  }
  return table.render();
}

std::string rules_view(const std::vector<api::AlertRule>& rules) {
  Table table({"NAME", "METRIC", "CONDITION", "FOR", "SEVERITY", "SCOPE"});
  for (const auto& rule : rules) {
    table.add_row(
        {rule.name, rule.metric,
         rule.comparison == "absent" ? rule.comparison
                                     : fmt::format("{} {}", rule.comparison, rule.threshold),
         fmt::format("{}s", rule.for_s), rule.severity,
         rule.scope == "all" ? rule.scope : rule.scope + " " + rule.scope_value.value_or("-")});
  }
  return table.render();
}

std::string points_view(const api::MetricSeries& answer) {
  Table table({"TIME", "VALUE", "SERIES"});
  for (const auto& point : answer.points) {
    table.add_row(
        {format_rfc3339(point.t), fmt::format("{}", point.value), std::to_string(point.series)});
  }
  return table.render();
}

struct RuleOptions {
  std::string name, metric, comparison, severity, scope, scope_value;
  double threshold = 0;
  double for_s = 0;
  bool idle = false;
  bool auto_stop = false;
};

void add_rule_commands(CLI::App& alerts, Context& ctx) {
  auto* rule = alerts.add_subcommand("rule", "Set or remove an alert rule (operators)");
  rule->require_subcommand(1);
  auto options = std::make_shared<RuleOptions>();
  auto* set = rule->add_subcommand("set", "Create or replace a rule");
  set->add_option("name", options->name, "the rule's name ([a-z0-9_.-])")->required();
  set->add_option("--metric", options->metric, "gpu_temp, gpu_util, ..., node_heartbeat_age_s")
      ->required();
  set->add_option("--comparison", options->comparison, ">, >=, <, <=, ==, != or absent")
      ->required();
  set->add_option("--threshold", options->threshold, "the value compared with");
  set->add_option("--for", options->for_s, "seconds the condition must hold")
      ->capture_default_str();
  set->add_option("--severity", options->severity, "info, warning or critical");
  set->add_option("--scope", options->scope, "all, node, gpu_type or instance");
  set->add_option("--scope-value", options->scope_value, "the node, GPU type or instance");
  set->callback([&ctx, options] {
    ctx.set_command([&ctx, options] {
      const auto given = [](const std::string& text) {
        return text.empty() ? std::nullopt : std::optional(text);
      };
      api::AlertRuleCreate body{.name = options->name,
                                .metric = options->metric,
                                .comparison = options->comparison,
                                .for_s = options->for_s,
                                .severity = given(options->severity),
                                .scope = given(options->scope),
                                .scope_value = given(options->scope_value)};
      if (options->comparison != "absent") body.threshold = options->threshold;
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.monitoring().put_alert_rule(body); },
          [](const api::AlertRule& saved) { return rules_view({saved}); });
    });
  });
  auto name = std::make_shared<std::string>();
  auto* rm = rule->add_subcommand("rm", "Remove a rule set through the API");
  rm->add_option("name", *name, "the rule's name")->required();
  rm->callback([&ctx, name] {
    ctx.set_command([&ctx, name]() -> Status {
      auto api = ctx.api();
      if (!api) return fail(api.error());
      GPURENT_CHECK((*api)->monitoring().delete_alert_rule(*name));
      ctx.out() << fmt::format("rule {} removed\n", *name);
      return Status{};
    });
  });
}

void add_metrics_commands(CLI::App& app, Context& ctx) {
  auto* metrics = app.add_subcommand("metrics", "GPU telemetry")->group("Monitoring");
  metrics->require_subcommand(1);
  struct QueryOptions {
    std::string metric, gpu, node, instance, from, to, step, agg;
  };
  auto options = std::make_shared<QueryOptions>();
  auto* query = metrics->add_subcommand("query", "A metric over time, aggregated across GPUs");
  query->add_option("metric", options->metric, "gpu_util, gpu_temp, power_usage, fb_used, ...")
      ->required();
  query->add_option("--gpu", options->gpu, "a GPU UUID");
  query->add_option("--node", options->node, "a node (operators)");
  query->add_option("--instance", options->instance, "an instance");
  query->add_option("--from", options->from, "RFC 3339 or Unix seconds (default: an hour ago)");
  query->add_option("--to", options->to, "RFC 3339 or Unix seconds (default: now)");
  query->add_option("--step", options->step, "bucket width: 60, 5m, 1h (default 60 s)");
  query->add_option("--agg", options->agg, "avg, max, min or sum (default avg)");
  query->callback([&ctx, options] {
    ctx.set_command([&ctx, options] {
      const std::vector<std::pair<std::string, std::string>> params = {
          {"metric", options->metric},     {"gpu", options->gpu},   {"node", options->node},
          {"instance", options->instance}, {"from", options->from}, {"to", options->to},
          {"step", options->step},         {"agg", options->agg}};
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.monitoring().query_metrics(params); },
          points_view);
    });
  });
}

}  // namespace

void add_monitoring_commands(CLI::App& app, Context& ctx) {
  auto* alerts = app.add_subcommand("alerts", "Alerts: what is pending or firing, and the rules")
                     ->group("Monitoring");
  const auto list = [&ctx] {
    ctx.set_command([&ctx] {
      return ctx.call_and_show(
          [](client::ApiClient& api) { return api.monitoring().list_alerts(); }, alerts_view);
    });
  };
  alerts->callback([alerts, list] {
    if (alerts->get_subcommands().empty()) list();
  });
  ctx.add_watch_option(
      *alerts->add_subcommand("ls", "Pending and firing alerts (the default)")->callback(list));
  alerts->add_subcommand("rules", "Every rule in force (operators)")->callback([&ctx] {
    ctx.set_command([&ctx] {
      return ctx.call_and_show(
          [](client::ApiClient& api) { return api.monitoring().list_alert_rules(); }, rules_view);
    });
  });
  auto id = std::make_shared<std::string>();
  auto* ack = alerts->add_subcommand("ack", "Acknowledge an alert");
  ack->add_option("id", *id, "the alert's id, as `gpurent alerts` shows it")->required();
  ack->callback([&ctx, id] {
    ctx.set_command([&ctx, id] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.monitoring().acknowledge_alert(*id); },
          [](const api::AlertAcknowledged& answer) {
            return fmt::format("{} acknowledged\n", sanitize(answer.id));
          });
    });
  });
  add_rule_commands(*alerts, ctx);
  add_metrics_commands(app, ctx);
}

}  // namespace gpurent::cli
