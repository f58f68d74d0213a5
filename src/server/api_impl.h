// The API's state and its handlers, shared by the files that register its routes: api.cc
// (authentication, the route table's root), api_instances.cc (instances, templates, jobs, uploads),
// api_accounts.cc (tenants, keys, billing, prices, reservations, volumes, quotas) and api_fleet.cc
// (nodes, the agent protocol, events, monitoring). Internal to the server.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "api/billing.h"
#include "billing/revenue.h"
#include "billing/work_estimate.h"
#include "common/json.h"
#include "net/await_on.h"
#include "net/router.h"
#include "server/access.h"
#include "server/api.h"
#include "server/api_http.h"
#include "server/console.h"
#include "server/monitoring_api.h"
#include "server/rate_limiter.h"
#include "server/telemetry_ingest.h"

namespace gpurent::server {

using controller::Controller;
using model::Principal;
using net::PathParams;
using net::Router;

// Pages of a listing, and how long a long poll or a followed log waits.
inline constexpr size_t kMaxListLimit = 500;
inline constexpr size_t kDefaultListLimit = 100;
inline constexpr std::chrono::seconds kMaxLongPoll{60};
inline constexpr size_t kLogChunkBytes = 64 * 1024;
inline constexpr std::chrono::seconds kFollowPoll{15};
inline constexpr size_t kMaxReportedWorkloads = 1024;

using RouteHandler = std::function<asio::awaitable<Response>(Request&, const PathParams&)>;

class Api::Impl {
  // The API (api.h) is what uses the state and the handlers below; nothing else reaches them.
  friend class Api;

 public:
  Impl(ControllerHost& host, LogStore& logs, SessionSigner sessions)
      : host(host), logs(logs), console(sessions), proxy(host, std::move(sessions), console) {
    add_routes();
    gate_forwarded_writes();
  }
  // Uploads queued on the log thread are written before the API (and then the LogStore) goes.
  ~Impl() { log_thread.join(); }

 private:
  struct CachedView {
    int64_t revision = 0;
    std::string body;
  };
  ControllerHost& host;
  LogStore& logs;
  ConsoleSessions console;
  TenantProxy proxy;
  // Log uploads write files (a directory and a file per run: ext4 makes each about 0.1 ms), so
  // they run here, off the I/O thread; reads of logs stay on the I/O thread.
  asio::thread_pool log_thread{1};
  TelemetryIngest telemetry_ingest{host.controller().options().series_fed_by_host
                                       ? &host.controller().fleet().monitor().series()
                                       : nullptr};
  Router<RouteHandler> router;
  std::unordered_map<std::string, CachedView> instance_views;
  RequestMetrics request_metrics;
  SystemClock rate_clock;
  RateLimiter rate_limiter{RateLimitConfig{}, rate_clock};
  std::string metrics_token;              // empty: GET /metrics needs no token
  UploadStore* uploads = nullptr;         // none: uploads are refused (503)
  bool bind_node_credentials = false;     // ServerConfig::bind_node_credentials
  bool agents_need_certificates = false;  // [tls] client_ca_file (mutual TLS)
  OutboundPolicy outbound;                // ServerConfig::outbound: the registries images may name

  Controller& ctl() { return host.controller(); }

  // `?tenant=`: a tenant's id, or its name (names are unique).
  // Another tenant's, for a caller who is not an operator: 404 tenant_not_found, as its objects.
  Result<std::optional<std::string>> tenant_query(const Principal& caller,
                                                  const Request& request) const;
  // The caller of a tenant-facing route, from its API key, or else from its console session
  // cookie (401 otherwise; 403 for a console request without its CSRF token).
  Result<Principal> principal(const Request& request);
  // The node calling an agent route, from its credential (401; 403 from another address when
  // credentials are bound to their node's address).
  Result<std::string> node_of(const Request& request);
  // Refuses an agent's request without a verified client certificate when agents need one.
  Status agent_certificate(const Request& request) const;

  // The tenant a billing read is about: the caller's own, or (for operators) `?tenant=`. Another
  // tenant's is not found, as everywhere else.
  Result<std::string> billed_tenant(const Principal& caller, const Request& request);
  static Status require_operator(const Principal& caller);

  // Registers a handler that needs an API key whose role and scopes reach the route
  // (server/access.h), within the key's rate limits; a route that writes is audited.
  template <class Fn>
  void keyed(std::string method, std::string pattern, Fn fn) {
    KeyedRoute route{access_of(method, pattern), method + " " + pattern, std::move(fn)};
    router.add(std::move(method), std::move(pattern),
               [this, route = std::move(route)](Request& request, const PathParams& params) {
                 return call_keyed(route, request, params);
               });
  }
  using KeyedHandler =
      std::function<asio::awaitable<Response>(const Principal&, Request&, const PathParams&)>;
  struct KeyedRoute {
    RouteAccess access;
    std::string action;  // "POST /v1/instances", for the audit log
    KeyedHandler handler;
  };
  asio::awaitable<Response> call_keyed(const KeyedRoute& route, Request& request,
                                       const PathParams& params);
  // The body within the caller's tenant's max_body_bytes (413 payload_too_large).
  Status body_within_quota(const Principal& caller, const Request& request);

  // Runs a command for `request` and resumes once it is durable, or, while the request is
  // audited (an AuditedCall is alive for it), once it is applied: audit() then commits it
  // together with the request's audit entry, before the answer goes out.
  template <class Fn>
  asio::awaitable<std::invoke_result_t<Fn, Controller&>> mutate(const Request& request, Fn fn) {
    auto result = host.apply(std::move(fn));
    if (!audited_requests.contains(&request)) co_await host.commit_applied();
    co_return result;
  }
  // Marks a request as audited for as long as it lives.
  class AuditedCall {
   public:
    AuditedCall(Impl& api, const Request& request) : api_(api), request_(request) {
      api_.audited_requests.insert(&request_);
    }
    ~AuditedCall() { api_.audited_requests.erase(&request_); }
    AuditedCall(const AuditedCall&) = delete;
    AuditedCall& operator=(const AuditedCall&) = delete;

   private:
    Impl& api_;
    const Request& request_;
  };
  std::unordered_set<const Request*> audited_requests;
  // Records who called `action` and how it was answered (model/audit.h), and commits it with
  // whatever the request applied: resumes once both are durable. `caller` is null when no key
  // was recognised.
  asio::awaitable<void> audit(const Principal* caller, const Request& request,
                              std::string_view action, const Response& response);
  // The same for any request: `status` answered, and its `outcome`.
  asio::awaitable<void> audit(const Principal* caller, std::string_view address,
                              std::string_view target, std::string_view action, int status,
                              std::string outcome);
  // The exec and copies the proxy forwards pass the same rate limits and are audited the same
  // (an entry forwarded to a node records status 0 and outcome "forwarded": the node answers).
  void gate_forwarded_writes();
  // route_access(), which every keyed route must have (checked as the routes are added).
  static RouteAccess access_of(std::string_view method, std::string_view pattern);

  // Registers a handler for agents (node credential).
  template <class Fn>
  void agent(std::string method, std::string pattern, Fn fn) {
    router.add(std::move(method), std::move(pattern),
               [this, fn](Request& request, const PathParams&) -> asio::awaitable<Response> {
                 auto node = node_of(request);
                 if (!node) co_return problem_response(node.error());
                 co_return co_await fn(*node, request);
               });
  }

  // --- api_console.cc: the console's files, signing in and out ---------------------------------
  void add_console_routes();
  // `caller` is set once the key is recognised (for the audit log).
  asio::awaitable<Response> sign_in(Request& request, std::optional<Principal>& caller);
  // The console session the caller is signed in with (404 session_not_found for an API key).
  Result<const model::ApiKey*> console_session(const Principal& caller);
  Json session_view(const model::ApiKey& session) const;

  // --- api.cc: the route table -----------------------------------------------------------------
  void add_routes();
  Json gpu_types();

  // --- api_instances.cc: instances, templates, jobs, uploads -----------------------------------
  void add_instance_routes();
  // A command on one instance (stop, delete); answers 202 with its view.
  using InstanceCommand = Result<model::Instance> (Controller::*)(const Principal&,
                                                                  std::string_view);
  void instance_action(std::string pattern, std::string method, InstanceCommand command);
  // POST /v1/instances/{id}/start, with an optional body {"anywhere": bool}.
  asio::awaitable<Response> start_instance(const Principal& caller, Request& request,
                                           std::string id);
  // 202 with the instance's view, or the command's problem.
  Response instance_accepted(const Result<model::Instance>& result);
  asio::awaitable<Response> create_instance(const Principal& caller, Request& request);
  Response list_instances(const Principal& caller, const Request& request);

  // The serialized view of an instance, cached by revision: reads of instances dominate API
  // traffic, and building the JSON is most of their cost. Bounded: cleared when it grows past
  // kMaxCachedViews (it refills with what is read).
  const std::string& instance_json(const model::Instance& instance);

  Response instance_logs(const Principal& caller, const Request& request, const std::string& id);

  // A request naming a template takes the template's runtime fields (model::apply_template),
  // its own image, command and env winning; `runtime` picks the template's process or container
  // form, or asks for a VM (with or without a template; 422 vm_image_unsupported with an image).
  // The request's own image must come from a registry `outbound` allows (422
  // image_registry_not_allowed); a template's images are the operator's and pass.
  Result<model::InstanceSpec> with_template(const Json& body, model::InstanceSpec spec);

  void add_template_routes();
  void add_job_routes();
  asio::awaitable<Response> create_job(const Principal& caller, Request& request);

  // Paginated like the instances: a listing of thousands of jobs is thousands of views.
  Response list_jobs(const Principal& caller, const Request& request);

  // The log of one member (task and rank) of a job: that member instance's log, served as
  // GET /v1/instances/{id}/logs serves it.
  Response job_logs(const Principal& caller, const Request& request, const std::string& id);

  // Tenants' uploads (workdirs): created, appended to in pieces, read back.
  void add_upload_routes();

  static Error uploads_unavailable();

  // A spec's workdir must be a complete upload of the caller's tenant.
  Status check_workdir(const Principal& caller, const model::InstanceSpec& spec);

  // POST /v1/uploads {"size", "sha256"}: declares an upload (server/upload_store.h).
  asio::awaitable<Response> create_upload(const Principal& caller, Request& request);

  // PUT /v1/uploads/{id}?offset=N with the next bytes as the body.
  asio::awaitable<Response> append_upload(const Principal& caller, const Request& request,
                                          std::string id);

  // --- api_accounts.cc: tenants, keys, money, prices, reservations, volumes, quotas ------------
  // Tenants, their API keys, and the join tokens that let nodes register.
  void add_tenant_routes();

  asio::awaitable<Response> create_tenant(const Principal& caller, Request& request);
  asio::awaitable<Response> create_api_key(const Principal& caller, Request& request);
  asio::awaitable<Response> create_join_token(const Principal& caller, Request& request);
  void add_billing_routes();
  asio::awaitable<Response> topup(const Principal& caller, Request& request);

  // Packages, balance settings and invoices (controller/accounts.cc).
  void add_account_routes();

  // Revenue in [from, to) (RFC 3339 query parameters; by default all of it), by GPU type and
  // tenant: a run's type from its usage record, a package's or a reserved term's from it.
  Result<billing::RevenueReport> revenue(const Principal& caller, const Request& request);

  // The price book, the spot market and estimates (server/price_views.h has their forms).
  void add_price_routes();

  // GET /v1/spot-prices?gpu_type=&from=&to=: the points of [from, to) (default: the last day),
  // with the one in force at `from` first, per type (all types, or one), and the price now.
  Response spot_prices(const Request& request);
  // POST /v1/estimate: an hour of the launch, and how long its work takes and costs.
  Result<api::Estimate> estimate(const model::InstanceSpec& spec,
                                 const std::optional<billing::TrainingWork>& work);

  void add_reservation_routes();
  asio::awaitable<Response> create_reservation(const Principal& caller, Request& request);
  void add_volume_routes();
  void add_quota_routes();

  asio::awaitable<Response> set_quota(const Principal& caller, Request& request,
                                      std::string tenant_id);

  // A POST that creates an object under Idempotency-Key: parse the body, run the controller's
  // create command (a Controller member, or a callable taking the Controller first) with the key
  // and the body's fingerprint, answer 201 with the view (and the
  // object's Location under `location`). `view` gives the view and whether it was a replay.
  template <class Parse, class Create, class View>
  asio::awaitable<Response> create_object(const Principal& caller, Request& request, Parse parse,
                                          Create create, View view, std::string_view location) {
    auto body = parse_json_object(request.body);
    if (!body) co_return problem_response(body.error());
    auto parsed = parse(*body);
    if (!parsed) co_return problem_response(parsed.error());
    auto key = idempotency_key(request);
    if (!key) co_return problem_response(key.error());
    const std::string fingerprint = hash_secret(body->dump());
    auto created = co_await mutate(request, [&](Controller& c) {
      return std::invoke(create, c, caller, std::move(*parsed), *key, fingerprint);
    });
    if (!created) co_return problem_response(created.error());
    auto [json, replayed] = view(*created);
    std::string id = json.at("id").template get<std::string>();
    co_return created_response(json, std::string(location) + id, replayed);
  }

  // An operator's write answered with 200 and `view` of its result: the body is parsed by
  // `parse` and applied on the controller by `apply`. Others are refused before the body is read
  // (they learn they may not before they learn what was wrong with it).
  template <class Parse, class Apply, class View>
  asio::awaitable<Response> operator_write(const Principal& caller, const Request& request,
                                           Parse parse, Apply apply, View view) {
    if (auto allowed = require_operator(caller); !allowed) {
      co_return problem_response(allowed.error());
    }
    auto body = parse_json_object(request.body);
    if (!body) co_return problem_response(body.error());
    auto parsed = parse(*body);
    if (!parsed) co_return problem_response(parsed.error());
    auto result =
        co_await mutate(request, [&](Controller& c) { return apply(c, std::move(*parsed)); });
    co_return result_response(200, result, view);
  }

  // --- api_fleet.cc: nodes, the agent protocol, events, monitoring -----------------------------
  // Operators: the fleet.
  void add_node_routes();

  // POST /v1/training-benchmarks: the tail of the resnet50-bench instance's log (kTrainingLogTail
  // bytes, where its results are) to Controller::record_training_benchmark.
  static constexpr int64_t kTrainingLogTail = 1 << 20;
  asio::awaitable<Response> record_training_benchmark(const Principal& caller,
                                                      const Request& request);

  // An operator command on a node; answers the node and how many instances it set moving.
  void node_action(std::string pattern, controller::NodeAction action);

  // GPU quarantine (controller/quarantine.cc): operators put a quarantined GPU back in service;
  // the answer is the node's view.
  void add_quarantine_routes();

  // The agent protocol (model/agent_protocol.h): node credentials, not API keys.
  void add_agent_routes();

  asio::awaitable<Response> register_node(Request& request);
  asio::awaitable<Response> desired(const std::string& node, Request& request);

  // The node's desired states as a stream (model/agent_protocol.h): one line per generation
  // above the last one sent, each built and made durable as a long poll's answer is.
  Response watch_desired(const std::string& node, int64_t after);

  asio::awaitable<Response> report(const std::string& node, Request& request);

  // Runs `work` on the log thread; awaiting the result resumes on the caller's (I/O) thread.
  template <class Work>
  auto on_log_thread(Work work) {
    return net::await_on(log_thread, std::move(work));
  }

  struct LogWrite {
    Result<int64_t> size;  // after the append
    int64_t current = 0;   // the stored size, when the append left a gap
  };

  asio::awaitable<Response> upload_logs(const std::string& node, const Request& request);

  // GET /v1/agent/upload?id=: a complete upload that an instance on this node unpacks, or that a
  // copy into an instance or volume on it was granted (proxy.h).
  asio::awaitable<Response> download_upload(const std::string& node, const Request& request);

  // The event log, oldest first; the cursor is the seq of the last event seen, so a client
  // polls for what is new with the next_cursor of its last page.
  void add_event_routes();
  // GET /v1/audit (model/audit.h): tenant admins their tenant's entries, operators all.
  void add_audit_routes();

  // Telemetry queries, alerts and their rules (monitoring_api.h), and the Prometheus page.
  void add_monitoring_routes();

  static std::string_view openapi_document();
};

}  // namespace gpurent::server
