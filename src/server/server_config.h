// The server's config file (`gpurent server --config FILE`, TOML): what an operator sets once per
// deployment rather than through the API.
//
//   [metrics]
//   bearer_token = "..."        # GET /metrics then needs it (default: open)
//
//   [store]
//   url = "postgres://gpurent@db.internal/gpurent"  # a shared PostgreSQL (server.h: `--store`)
//   advertise_url = "http://10.0.0.5:8080"          # how the other servers reach this one
//
//   [tls]                       # HTTPS on the listen address (net/tls.h); reloaded on SIGHUP
//   cert_file = "/etc/gpurent/tls/server.pem"  # the certificate, then its chain
//   key_file = "/etc/gpurent/tls/server.key"
//   client_ca_file = "/etc/gpurent/tls/agents-ca.pem"  # mutual TLS: agents must present a
//                               # certificate signed by this CA (tenants need none)
//
//   [rate_limits]               # server/rate_limiter.h; every limit {per_second, burst}
//   per_key = { per_second = 200, burst = 400 }
//   creations_per_key = { per_second = 20, burst = 200 }
//   per_address = { per_second = 500, burst = 1000 }
//   auth_failures_per_address = { per_second = 1, burst = 20 }
//   limit_loopback = false      # limit loopback addresses too (default: not by address)
//   enabled = true              # false: no limits at all
//
//   [agents]
//   bind_credentials_to_address = true   # a node's credential is accepted only from the address
//                               # the node registered from (default: from anywhere)
//
//   [[alerts.rules]]            # any number; the fields of a rule as in the API
//   name = "hot_gpu"            # (monitor/alerts_json.h): metric, comparison, threshold, for_s,
//   metric = "gpu_temp"         # severity, scope, scope_value, idle_auto_stop
//   comparison = ">"
//   threshold = 80
//   for_s = 30
//
//   [alerts]
//   clock_skew_limit_s = 2      # the built-in agent_clock_skew rule's limit (default 2)
//
//   [[alerts.webhooks]]         # each alert transition is POSTed here as JSON
//   url = "https://alerts.example/hook"   # http:// or https://
//   ca_file = "/etc/gpurent/alerts-ca.pem" # https: trust these instead of the system's store
//   events = ["balance.low"]    # the event kinds POSTed too (default: the balance guard's,
//                               # kDefaultWebhookEvents; [] for alerts only)
//
//   [secrets]
//   key_file = "/etc/gpurent/secrets.key"
//                               # seals the secrets the server keeps (the console's session key;
//                               # common/secret_box.h). Default: <data dir>/secrets.key, made (32
//                               # random bytes, 0600) when missing. Servers sharing a store need
//                               # the same file; a lost or wrong one stops the server at start.
//
//   [benchmark]                 # the node benchmark (docs/node-benchmark.md)
//   on_join_and_release = true  # measure GPUs never measured when their node joins, and a GPU
//                               # released from quarantine, before they take work (default true)
//   idle_interval_h = 168       # measure an idle node whose figures are older (default a week;
//                               # 0: never)
//   timeout_min = 30            # a request not answered by then is dropped (default 30)
//   quarantine_slow = true      # quarantine a GPU 10 % below its type's median (default true;
//                               # false: only the event gpu.slow and the alert gpu_benchmark_slow)
//
//   [outbound]                  # server/outbound.h: what the server may connect to (webhooks)
//   allow = ["hooks.internal", "registry.internal:5000", "10.1.0.0/16", "127.0.0.1"]
//                               # hosts, host:port, addresses and CIDRs that may be reached though
//                               # not public (default: public addresses only)
//   registries = ["docker.io", "ghcr.io", "registry.internal:5000"]
//                               # the only registries tenants' images may name (default: any but
//                               # loopback or private IP literals and localhost not in `allow`)
//
// Unknown keys are errors (a misspelt key must not be silently ignored), as are malformed rules
// (their API error codes, with the rule's position). Errors are "invalid_config".
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "controller/controller.h"
#include "model/event.h"
#include "monitor/alerts.h"
#include "net/tls.h"
#include "server/outbound.h"
#include "server/rate_limiter.h"

namespace gpurent::server {

// A tenant's balance below its warning threshold, and its work stopped for funds: what billing's
// balance guard tells people, and what an operator wants pushed without polling the event log.
inline const std::vector<std::string> kDefaultWebhookEvents = {
    std::string(model::event_kind::kBalanceLow),
    std::string(model::event_kind::kInstanceStoppedForBalance)};

struct Webhook {
  std::string url;      // "http[s]://host[:port]/path"
  std::string ca_file;  // https: a PEM file of the certificates to trust; "": the system's store
  std::vector<std::string> events = kDefaultWebhookEvents;  // event kinds forwarded
  bool operator==(const Webhook&) const = default;
};

struct ServerConfig {
  std::string store_url;      // "" = the SQLite file in the data directory
  std::string advertise_url;  // "" = the URL the server listens on
  std::string metrics_token;
  bool bind_node_credentials = false;
  std::vector<monitor::Rule> alert_rules;
  std::vector<Webhook> webhooks;
  Millis clock_skew_limit{2'000};
  RateLimitConfig rate_limits;
  net::TlsFiles tls;             // none (cert_file ""): plain HTTP
  std::string secrets_key_file;  // "" = <data dir>/secrets.key
  OutboundPolicy outbound;
  controller::ControllerOptions::Benchmarks benchmarks{
      .on_join_and_release = true,
      .idle_interval = Millis(7 * 24 * 3'600'000LL),
      .timeout = Millis(30 * 60'000),
      .quarantine_slow = true};
};

Result<ServerConfig> read_server_config(const std::string& path);
// The same from TOML text (tests).
Result<ServerConfig> parse_server_config(const std::string& text, const std::string& name);

}  // namespace gpurent::server
