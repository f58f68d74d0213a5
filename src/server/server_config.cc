#include "server/server_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <span>
#include <sstream>
#include <toml.hpp>

#include "common/json.h"
#include "monitor/alerts_json.h"
#include "server/webhooks.h"

namespace gpurent::server {
namespace {

Error invalid_config(const std::string& name, std::string_view why) {
  return Error::invalid("invalid_config", fmt::format("{}: {}", name, why));
}

Status only_keys(const toml::value& table, std::span<const std::string_view> keys,
                 const std::string& name, std::string_view where) {
  if (!table.is_table())
    return fail(invalid_config(name, fmt::format("{} must be a table", where)));
  for (const auto& [key, value] : table.as_table()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      return fail(invalid_config(name, fmt::format("unknown key '{}' in {}", key, where)));
    }
  }
  return {};
}
Status only_keys(const toml::value& table, std::initializer_list<std::string_view> keys,
                 const std::string& name, std::string_view where) {
  return only_keys(table, std::span(keys.begin(), keys.size()), name, where);
}

// A rule's table as the API's JSON body.
Result<Json> rule_json(const toml::value& table, const std::string& name, std::string_view where) {
  if (!table.is_table())
    return fail(invalid_config(name, fmt::format("{} must be a table", where)));
  Json out = Json::object();
  for (const auto& [key, value] : table.as_table()) {
    if (value.is_string()) {
      out[key] = value.as_string().str;
    } else if (value.is_integer()) {
      out[key] = value.as_integer();
    } else if (value.is_floating()) {
      out[key] = value.as_floating();
    } else if (value.is_boolean()) {
      out[key] = value.as_boolean();
    } else {
      return fail(invalid_config(name, fmt::format("{}.{} has an unsupported type", where, key)));
    }
  }
  return out;
}

// A webhook's `events`: known event kinds (model::event_kind::kAll), each once.
Result<std::vector<std::string>> event_kinds(const toml::value& value, const std::string& name,
                                             const std::string& where) {
  const auto invalid = [&] {
    std::string known;
    for (const auto kind : model::event_kind::kAll) {
      known += (known.empty() ? "" : ", ") + std::string(kind);
    }
    return fail(invalid_config(
        name, fmt::format("{}.events must be a list of distinct event kinds ({})", where, known)));
  };
  if (!value.is_array()) return invalid();
  std::vector<std::string> kinds;
  for (const auto& item : value.as_array()) {
    if (!item.is_string()) return invalid();
    const std::string& kind = item.as_string().str;
    if (std::ranges::find(model::event_kind::kAll, kind) == std::end(model::event_kind::kAll) ||
        std::ranges::find(kinds, kind) != kinds.end()) {
      return invalid();
    }
    kinds.push_back(kind);
  }
  return kinds;
}

// A limit's table: {per_second = R, burst = B}; per_second 0 turns it off.
Result<RateLimit> rate_limit(const toml::value& table, const std::string& name,
                             const std::string& where) {
  GPURENT_CHECK(only_keys(table, {"per_second", "burst"}, name, where));
  const auto number = [&](std::string_view key) -> double {
    if (!table.contains(std::string(key))) return -1;
    const auto& value = table.at(std::string(key));
    return value.is_integer()    ? static_cast<double>(value.as_integer())
           : value.is_floating() ? value.as_floating()
                                 : -1;
  };
  const double per_second = number("per_second");
  const double burst = number("burst");
  if (!(per_second >= 0 && per_second <= 1e6) || !(burst >= 1 && burst <= 1e6) ||
      burst != std::floor(burst)) {
    return fail(invalid_config(name, fmt::format("{} must be {{per_second = 0 to 1000000, burst = "
                                                 "a whole number 1 to 1000000}}",
                                                 where)));
  }
  return RateLimit{per_second, static_cast<int64_t>(burst)};
}

Status parse_rate_limits(const toml::value& table, const std::string& name, RateLimitConfig& out) {
  GPURENT_CHECK(only_keys(table,
                          {"enabled", "limit_loopback", "per_key", "creations_per_key",
                           "per_address", "auth_failures_per_address"},
                          name, "[rate_limits]"));
  for (const auto& [key, field] :
       {std::pair{"enabled", (bool*)nullptr}, std::pair{"limit_loopback", &out.limit_loopback}}) {
    if (!table.contains(key)) continue;
    if (!table.at(key).is_boolean()) {
      return fail(invalid_config(name, fmt::format("rate_limits.{} must be true or false", key)));
    }
    if (field != nullptr) *field = table.at(key).as_boolean();
  }
  for (const auto& [key, field] :
       {std::pair{"per_key", &out.per_key}, std::pair{"creations_per_key", &out.creations_per_key},
        std::pair{"per_address", &out.per_address},
        std::pair{"auth_failures_per_address", &out.auth_failures_per_address}}) {
    if (!table.contains(key)) continue;
    GPURENT_TRY(limit, rate_limit(table.at(key), name, fmt::format("rate_limits.{}", key)));
    *field = limit;
  }
  if (table.contains("enabled") && !table.at("enabled").as_boolean()) {
    out = RateLimitConfig::unlimited();
  }
  return {};
}

// A section of string fields, each optional: `section.key = "..."` into *field.
Status string_fields(const toml::value& table, std::string_view section,
                     std::initializer_list<std::pair<const char*, std::string*>> fields,
                     const std::string& name) {
  std::vector<std::string_view> keys;
  for (const auto& [key, field] : fields) keys.emplace_back(key);
  GPURENT_CHECK(only_keys(table, keys, name, fmt::format("[{}]", section)));
  for (const auto& [key, field] : fields) {
    if (!table.contains(key)) continue;
    if (!table.at(key).is_string()) {
      return fail(invalid_config(name, fmt::format("{}.{} must be a string", section, key)));
    }
    *field = table.at(key).as_string().str;
  }
  return {};
}

Result<ServerConfig> parse(const toml::value& data, const std::string& name) {
  ServerConfig config;
  GPURENT_CHECK(only_keys(data,
                          {"metrics", "alerts", "agents", "store", "rate_limits", "tls", "secrets",
                           "outbound", "benchmark"},
                          name, "the file"));
  if (data.contains("rate_limits")) {
    GPURENT_CHECK(parse_rate_limits(data.at("rate_limits"), name, config.rate_limits));
  }
  if (data.contains("store")) {
    GPURENT_CHECK(string_fields(
        data.at("store"), "store",
        {{"url", &config.store_url}, {"advertise_url", &config.advertise_url}}, name));
  }
  if (data.contains("tls")) {
    GPURENT_CHECK(string_fields(data.at("tls"), "tls",
                                {{"cert_file", &config.tls.cert_file},
                                 {"key_file", &config.tls.key_file},
                                 {"client_ca_file", &config.tls.client_ca_file}},
                                name));
    if (config.tls.cert_file.empty() || config.tls.key_file.empty()) {
      return fail(invalid_config(name, "[tls] needs both cert_file and key_file"));
    }
  }
  if (data.contains("agents")) {
    const auto& agents = data.at("agents");
    GPURENT_CHECK(only_keys(agents, {"bind_credentials_to_address"}, name, "[agents]"));
    if (agents.contains("bind_credentials_to_address")) {
      if (!agents.at("bind_credentials_to_address").is_boolean()) {
        return fail(
            invalid_config(name, "agents.bind_credentials_to_address must be true or false"));
      }
      config.bind_node_credentials = agents.at("bind_credentials_to_address").as_boolean();
    }
  }
  if (data.contains("metrics")) {
    const auto& metrics = data.at("metrics");
    GPURENT_CHECK(only_keys(metrics, {"bearer_token"}, name, "[metrics]"));
    if (metrics.contains("bearer_token")) {
      if (!metrics.at("bearer_token").is_string()) {
        return fail(invalid_config(name, "metrics.bearer_token must be a string"));
      }
      config.metrics_token = metrics.at("bearer_token").as_string().str;
    }
  }
  if (!data.contains("alerts")) return config;
  const auto& alerts = data.at("alerts");
  GPURENT_CHECK(only_keys(alerts, {"rules", "webhooks", "clock_skew_limit_s"}, name, "[alerts]"));
  if (alerts.contains("clock_skew_limit_s")) {
    const auto& limit = alerts.at("clock_skew_limit_s");
    const double seconds = limit.is_integer()    ? static_cast<double>(limit.as_integer())
                           : limit.is_floating() ? limit.as_floating()
                                                 : -1;
    if (!(seconds > 0 && seconds <= 86'400)) {
      return fail(invalid_config(name,
                                 "alerts.clock_skew_limit_s must be a number of seconds "
                                 "above 0, at most 86400"));
    }
    config.clock_skew_limit = Millis(std::llround(seconds * 1000));
  }
  if (alerts.contains("rules")) {
    if (!alerts.at("rules").is_array()) {
      return fail(invalid_config(name, "alerts.rules must be an array of tables"));
    }
    size_t i = 0;
    for (const auto& table : alerts.at("rules").as_array()) {
      const std::string where = fmt::format("alerts.rules[{}]", i++);
      GPURENT_TRY(body, rule_json(table, name, where));
      auto rule = monitor::rule_from_json(body);
      if (!rule) {
        return fail(Error::invalid(rule.error().code,
                                   fmt::format("{}: {}: {}", name, where, rule.error().message)));
      }
      config.alert_rules.push_back(std::move(*rule));
    }
  }
  if (alerts.contains("webhooks")) {
    if (!alerts.at("webhooks").is_array()) {
      return fail(invalid_config(name, "alerts.webhooks must be an array of tables"));
    }
    size_t i = 0;
    for (const auto& table : alerts.at("webhooks").as_array()) {
      const std::string where = fmt::format("alerts.webhooks[{}]", i++);
      GPURENT_CHECK(only_keys(table, {"url", "ca_file", "events"}, name, where));
      if (!table.contains("url") || !table.at("url").is_string() ||
          !(table.at("url").as_string().str.starts_with("http://") ||
            table.at("url").as_string().str.starts_with("https://"))) {
        return fail(invalid_config(name, fmt::format("{}.url must be an http(s):// URL", where)));
      }
      if (table.contains("ca_file") && !table.at("ca_file").is_string()) {
        return fail(invalid_config(name, fmt::format("{}.ca_file must be a path", where)));
      }
      Webhook webhook{.url = table.at("url").as_string().str,
                      .ca_file = table.contains("ca_file") ? table.at("ca_file").as_string().str
                                                           : std::string()};
      if (table.contains("events")) {
        GPURENT_TRY(kinds, event_kinds(table.at("events"), name, where));
        webhook.events = std::move(kinds);
      }
      // Checked now, with the client that will send: a bad URL or an unreadable CA file is an
      // error at start, not a notification lost later.
      if (auto checked = webhook_client(webhook); !checked) {
        return fail(invalid_config(name, fmt::format("{}: {}", where, checked.error().message)));
      }
      config.webhooks.push_back(std::move(webhook));
    }
  }
  return config;
}

// A list of strings, or nothing when absent.
Result<std::vector<std::string>> strings(const toml::value& table, const std::string& key,
                                         const std::string& name, std::string_view where) {
  std::vector<std::string> out;
  if (!table.contains(key)) return out;
  const auto invalid = [&] {
    return fail(invalid_config(name, fmt::format("{}.{} must be a list of strings", where, key)));
  };
  if (!table.at(key).is_array()) return invalid();
  for (const auto& item : table.at(key).as_array()) {
    if (!item.is_string()) return invalid();
    out.push_back(item.as_string().str);
  }
  return out;
}

// [secrets] and [outbound]; then the webhooks' hosts against the policy, where they can be told
// before a delivery (addresses, localhost): a webhook that could never be delivered is an error
// at start.
Status parse_secrets_and_outbound(const toml::value& data, const std::string& name,
                                  ServerConfig& config) {
  if (data.contains("secrets")) {
    const auto& secrets = data.at("secrets");
    GPURENT_CHECK(only_keys(secrets, {"key_file"}, name, "[secrets]"));
    if (secrets.contains("key_file")) {
      if (!secrets.at("key_file").is_string() || secrets.at("key_file").as_string().str.empty()) {
        return fail(invalid_config(name, "secrets.key_file must be a path"));
      }
      config.secrets_key_file = secrets.at("key_file").as_string().str;
    }
  }
  if (data.contains("outbound")) {
    const auto& outbound = data.at("outbound");
    GPURENT_CHECK(only_keys(outbound, {"allow", "registries"}, name, "[outbound]"));
    GPURENT_TRY(allow, strings(outbound, "allow", name, "outbound"));
    GPURENT_TRY(registries, strings(outbound, "registries", name, "outbound"));
    auto policy = OutboundPolicy::make(allow, registries);
    if (!policy) {
      return fail(invalid_config(name, fmt::format("[outbound]: {}", policy.error().message)));
    }
    config.outbound = std::move(*policy);
  }
  for (size_t i = 0; i < config.webhooks.size(); ++i) {
    GPURENT_TRY(endpoint, webhook_client(config.webhooks[i]));  // as checked when read
    if (auto allowed = config.outbound.check_name(endpoint.origin.host, endpoint.port); !allowed) {
      return fail(
          invalid_config(name, fmt::format("alerts.webhooks[{}]: {}", i, allowed.error().message)));
    }
  }
  return {};
}

// [benchmark].
Status parse_benchmark(const toml::value& data, const std::string& name, ServerConfig& config) {
  if (!data.contains("benchmark")) return {};
  const auto& table = data.at("benchmark");
  GPURENT_CHECK(
      only_keys(table, {"on_join_and_release", "idle_interval_h", "timeout_min", "quarantine_slow"},
                name, "[benchmark]"));
  for (const auto& [key, flag] :
       {std::pair{"on_join_and_release", &config.benchmarks.on_join_and_release},
        std::pair{"quarantine_slow", &config.benchmarks.quarantine_slow}}) {
    if (!table.contains(key)) continue;
    if (!table.at(key).is_boolean()) {
      return fail(invalid_config(name, fmt::format("benchmark.{} must be true or false", key)));
    }
    *flag = table.at(key).as_boolean();
  }
  // A whole number of the unit, within [minimum, maximum].
  const auto whole = [&](const char* key, int64_t minimum, int64_t maximum,
                         int64_t unit_ms) -> Result<std::optional<Millis>> {
    if (!table.contains(key)) return std::optional<Millis>();
    const auto& value = table.at(key);
    if (!value.is_integer() || value.as_integer() < minimum || value.as_integer() > maximum) {
      return fail(invalid_config(
          name,
          fmt::format("benchmark.{} must be a whole number from {} to {}", key, minimum, maximum)));
    }
    return std::optional(Millis(value.as_integer() * unit_ms));
  };
  GPURENT_TRY(idle, whole("idle_interval_h", 0, 24 * 365, 3'600'000));
  GPURENT_TRY(timeout, whole("timeout_min", 1, 24 * 60, 60'000));
  if (idle) config.benchmarks.idle_interval = *idle;
  if (timeout) config.benchmarks.timeout = *timeout;
  return {};
}

}  // namespace

Result<ServerConfig> parse_server_config(const std::string& text, const std::string& name) {
  try {  // toml11 reports syntax errors by throwing
    std::istringstream stream(text);
    const toml::value data = toml::parse(stream, name);
    GPURENT_TRY(config, parse(data, name));
    GPURENT_CHECK(parse_secrets_and_outbound(data, name, config));
    GPURENT_CHECK(parse_benchmark(data, name, config));
    return config;
  } catch (const std::exception& e) {
    return fail(invalid_config(name, e.what()));
  }
}

Result<ServerConfig> read_server_config(const std::string& path) {
  std::ifstream file(path);
  if (!file) return fail(invalid_config(path, "cannot be read"));
  std::stringstream text;
  text << file.rdbuf();
  return parse_server_config(text.str(), path);
}

}  // namespace gpurent::server
