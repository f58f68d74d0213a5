#include "server/api.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <span>
#include <unordered_map>

#include <spdlog/spdlog.h>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "billing/revenue.h"
#include "common/json.h"
#include "common/random.h"
#include "model/agent_protocol.h"
#include "model/codec.h"
#include "model/gpu_catalog.h"
#include "model/service_path.h"
#include "model/template.h"
#include "model/workload_fields.h"
#include "monitor/alerts_json.h"
#include "net/await_on.h"
#include "net/router.h"
#include "server/account_views.h"
#include "server/monitoring_api.h"
#include "server/price_views.h"
#include "server/request_bodies.h"
#include "server/telemetry_ingest.h"
#include "server/upload_store.h"
#include "server/views.h"

namespace gpurent::server {

using controller::Controller;
using model::kMaxImageLength;
using model::Principal;
using model::set_by_platform;
using model::valid_env_name;
using model::valid_image;
using net::PathParams;
using net::Router;

namespace {

using RouteHandler = std::function<asio::awaitable<Response>(Request&, const PathParams&)>;

constexpr size_t kMaxListLimit = 500;
constexpr size_t kDefaultListLimit = 100;
constexpr std::chrono::seconds kMaxLongPoll{60};
constexpr size_t kLogChunkBytes = 64 * 1024;
constexpr std::chrono::seconds kFollowPoll{15};
constexpr size_t kMaxReportedWorkloads = 1024;
// Bounds on what a reservation or quota may count, far above any real fleet.

// A list that is returned whole (no further pages).
Json whole_list(Json items) { return {{"items", std::move(items)}, {"next_cursor", nullptr}}; }

Response json_response(int status, const Json& body) {
  return Response{status, "application/json", body.dump(), {}, {}};
}

Error unauthenticated(std::string_view why) {
  return {ErrorKind::kUnauthenticated, "unauthenticated", std::string(why)};
}

std::optional<std::string_view> bearer_token(const Request& request) {
  constexpr std::string_view kPrefix = "Bearer ";
  std::string_view header = request.authorization;
  if (!header.starts_with(kPrefix)) return std::nullopt;
  header.remove_prefix(kPrefix.size());
  if (header.empty() || header.size() > 256) return std::nullopt;
  return header;
}

Result<int64_t> query_int(const Request& request, const std::string& name, int64_t fallback,
                          int64_t min, int64_t max) {
  const auto it = request.query.find(name);
  if (it == request.query.end() || it->second.empty()) return fallback;
  int64_t value = 0;
  const auto* end = it->second.data() + it->second.size();
  const auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
  if (ec != std::errc() || ptr != end || value < min || value > max) {
    return fail(
        Error::invalid("invalid_query", fmt::format("query parameter '{}' must be an integer "
                                                    "between {} and {}",
                                                    name, min, max)));
  }
  return value;
}

std::optional<std::string> query_string(const Request& request, const std::string& name) {
  const auto it = request.query.find(name);
  if (it == request.query.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

// The Idempotency-Key header, if any; at most 128 characters.
Result<std::optional<std::string>> idempotency_key(const Request& request) {
  if (request.idempotency_key.empty()) return std::optional<std::string>();
  if (request.idempotency_key.size() > 128) {
    return fail(Error::invalid("invalid_header", "Idempotency-Key is longer than 128 characters"));
  }
  return std::optional<std::string>(request.idempotency_key);
}

template <class T>
Response result_response(int status, const Result<T>& result, auto&& view) {
  if (!result) return problem_response(result.error());
  return json_response(status, view(*result));
}

// A 201 for a created object, with its Location; an Idempotency-Key replay says that it is one.
Response created_response(const Json& view, std::string location, bool replayed) {
  Response response = json_response(201, view);
  response.headers.emplace_back("Location", std::move(location));
  if (replayed) response.headers.emplace_back("Idempotent-Replayed", "true");
  return response;
}

// "1"/"true" or "0"/"false"; absent is `fallback`.
Result<bool> query_flag(const Request& request, const std::string& name, bool fallback) {
  const auto value = query_string(request, name);
  if (!value) return fallback;
  if (*value == "1" || *value == "true") return true;
  if (*value == "0" || *value == "false") return false;
  return fail(Error::invalid("invalid_query",
                             fmt::format("query parameter '{}' must be true or false", name)));
}

}  // namespace

struct Api::Impl {
  Impl(ControllerHost& host, LogStore& logs, SessionSigner sessions)
      : host(host), logs(logs), proxy(host, std::move(sessions)) {
    add_routes();
  }
  // Uploads queued on the log thread are written before the API (and then the LogStore) goes.
  ~Impl() { log_thread.join(); }

  struct CachedView {
    int64_t revision = 0;
    std::string body;
  };

  ControllerHost& host;
  LogStore& logs;
  TenantProxy proxy;
  // Log uploads write files (a directory and a file per run: ext4 makes each about 0.1 ms), so
  // they run here, off the I/O thread; reads of logs stay on the I/O thread.
  asio::thread_pool log_thread{1};
  TelemetryIngest telemetry_ingest{
      host.controller().options().series_fed_by_host ? &host.controller().series_feed() : nullptr};
  Router<RouteHandler> router;
  std::unordered_map<std::string, CachedView> instance_views;
  RequestMetrics request_metrics;
  std::string metrics_token;           // empty: GET /metrics needs no token
  UploadStore* uploads = nullptr;      // none: uploads are refused (503)
  bool bind_node_credentials = false;  // ServerConfig::bind_node_credentials

  Controller& ctl() { return host.controller(); }

  // `?tenant=`: a tenant's id, or its name (names are unique).
  std::optional<std::string> tenant_query(const Request& request) const {
    auto tenant = query_string(request, "tenant");
    if (tenant) tenant = host.controller().tenant_id_for(*tenant);
    return tenant;
  }

  Result<Principal> principal(const Request& request) {
    return authenticate_api_key(ctl(), request.authorization);
  }

  Result<std::string> node_of(const Request& request) {
    const auto token = bearer_token(request);
    if (!token) return fail(unauthenticated("send 'Authorization: Bearer <node credential>'"));
    auto found = ctl().authenticate_node(hash_secret(*token));
    if (!found) return fail(unauthenticated("unknown node credential"));
    // A credential copied off its node is refused from anywhere else, when the operator asks.
    if (bind_node_credentials) {
      const std::string_view from = ctl().node_registered_from(*found);
      if (from != request.peer_address) {
        spdlog::warn("node_credential_refused node={} from={} registered_from={}", *found,
                     request.peer_address, from);
        return fail(Error{ErrorKind::kPermissionDenied, "node_address_mismatch",
                          fmt::format("this node credential is accepted only from {}, the "
                                      "address its node registered from",
                                      from)});
      }
    }
    return *found;
  }

  // The tenant a billing read is about: the caller's own, or (for operators) `?tenant=`. Another
  // tenant's is not found, as everywhere else.
  Result<std::string> billed_tenant(const Principal& caller, const Request& request) {
    std::string tenant = tenant_query(request).value_or(caller.tenant_id);
    GPURENT_CHECK(ctl().balance(caller, tenant));
    return tenant;
  }

  static Status require_operator(const Principal& caller) {
    if (caller.is_operator()) return {};
    return fail(Error{ErrorKind::kPermissionDenied, "forbidden", "this route is for operators"});
  }

  // Registers a handler that needs an API key.
  template <class Fn>
  void keyed(std::string method, std::string pattern, Fn fn) {
    router.add(std::move(method), std::move(pattern),
               [this, fn](Request& request, const PathParams& params) -> asio::awaitable<Response> {
                 auto caller = principal(request);
                 if (!caller) co_return problem_response(caller.error());
                 co_return co_await fn(*caller, request, params);
               });
  }

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

  void add_routes() {
    router.add("GET", "/healthz", [](Request&, const PathParams&) -> asio::awaitable<Response> {
      co_return json_response(200, {{"status", "ok"}});
    });
    router.add(
        "GET", "/v1/openapi.json", [](Request&, const PathParams&) -> asio::awaitable<Response> {
          co_return Response{200, "application/json", std::string(openapi_document()), {}, {}};
        });
    keyed("GET", "/v1/whoami",
          [](const Principal& caller, Request&, const PathParams&) -> asio::awaitable<Response> {
            co_return json_response(200, {{"tenant_id", caller.tenant_id},
                                          {"key_id", caller.key_id},
                                          {"role", model::to_string(caller.role)}});
          });
    keyed("GET", "/v1/gpu-types",
          [this](const Principal&, Request&, const PathParams&) -> asio::awaitable<Response> {
            co_return json_response(200, gpu_types());
          });
    keyed("GET", "/v1/offers",
          [this](const Principal&, Request&, const PathParams&) -> asio::awaitable<Response> {
            Json items = Json::array();
            for (const auto& offer : ctl().offers()) items.push_back(offer_view(ctl(), offer));
            co_return json_response(200, whole_list(std::move(items)));
          });
    keyed("POST", "/v1/instances",
          [this](const Principal& caller, Request& request, const PathParams&) {
            return create_instance(caller, request);
          });
    keyed("GET", "/v1/instances",
          [this](const Principal& caller, Request& request, const PathParams&)
              -> asio::awaitable<Response> { co_return list_instances(caller, request); });
    keyed("GET", "/v1/instances/{id}",
          [this](const Principal& caller, Request&,
                 const PathParams& params) -> asio::awaitable<Response> {
            auto found = ctl().instance(caller, params.find("id")->second);
            if (!found) co_return problem_response(found.error());
            co_return Response{200, "application/json", instance_json(**found), {}, {}};
          });
    instance_action("/v1/instances/{id}/stop", "POST", &Controller::stop_instance);
    instance_action("/v1/instances/{id}/start", "POST", &Controller::start_instance);
    instance_action("/v1/instances/{id}", "DELETE", &Controller::delete_instance);
    keyed("POST", "/v1/instances/{id}/services/{service}/ticket",
          [this](const Principal& caller, Request&,
                 const PathParams& params) -> asio::awaitable<Response> {
            const std::string& id = params.find("id")->second;
            const std::string& service = params.find("service")->second;
            auto ticket = proxy.ticket(caller, id, service);
            co_return result_response(201, ticket, [&](const auto& issued) {
              return Json{{"path", fmt::format("{}?login={}", model::service_base_url(id, service),
                                               issued.first)},
                          {"expires_at", format_rfc3339(issued.second)}};
            });
          });
    keyed("GET", "/v1/instances/{id}/logs",
          [this](const Principal& caller, Request& request,
                 const PathParams& params) -> asio::awaitable<Response> {
            co_return instance_logs(caller, request, params.find("id")->second);
          });
    add_job_routes();
    add_reservation_routes();
    add_volume_routes();
    add_quota_routes();
    add_template_routes();
    add_event_routes();
    add_price_routes();
    add_account_routes();
    add_monitoring_routes();
    add_quarantine_routes();
    keyed("GET", "/v1/billing/balance",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            const std::string tenant = tenant_query(request).value_or(caller.tenant_id);
            auto balance = ctl().balance(caller, tenant);
            co_return result_response(200, balance, [&](Micros amount) {
              return Json{{"tenant_id", tenant},
                          {"balance_micros", amount},
                          {"currency", ctl().options().currency}};
            });
          });
    keyed("GET", "/v1/billing/usage",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            auto tenant = billed_tenant(caller, request);
            if (!tenant) co_return problem_response(tenant.error());
            Json items = Json::array();
            Micros total = 0;
            for (const auto* usage : ctl().usage(*tenant)) {
              items.push_back(usage_view(*usage));
              total += usage->charged;
            }
            // Storage: one line per volume of the tenant, deleted ones included (they were billed).
            Json volumes = Json::array();
            for (const auto* volume : ctl().volume_usage(*tenant)) {
              volumes.push_back(volume_usage_view(*volume));
              total += volume->charged;
            }
            co_return json_response(200, {{"tenant_id", *tenant},
                                          {"items", std::move(items)},
                                          {"volumes", std::move(volumes)},
                                          {"total_micros", total},
                                          {"currency", ctl().options().currency},
                                          {"next_cursor", nullptr}});
          });
    keyed("GET", "/v1/billing/transfers",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            auto tenant = billed_tenant(caller, request);
            if (!tenant) co_return problem_response(tenant.error());
            Json items = Json::array();
            for (const auto& transfer : ctl().transfers(*tenant))
              items.push_back(transfer_view(transfer, ctl().options().currency));
            co_return json_response(200, whole_list(std::move(items)));
          });
    keyed("POST", "/v1/billing/topups",
          [this](const Principal& caller, Request& request, const PathParams&) {
            return topup(caller, request);
          });
    keyed("POST", "/v1/tenants",
          [this](const Principal& caller, Request& request, const PathParams&) {
            return create_tenant(caller, request);
          });
    keyed(
        "GET", "/v1/tenants",
        [this](const Principal& caller, Request&, const PathParams&) -> asio::awaitable<Response> {
          if (auto allowed = require_operator(caller); !allowed)
            co_return problem_response(allowed.error());
          Json items = Json::array();
          for (const auto* tenant : ctl().tenants(caller)) {
            Json view = tenant_view(*tenant);
            view["balance_micros"] = *ctl().balance(caller, tenant->id);
            view["currency"] = ctl().options().currency;
            items.push_back(std::move(view));
          }
          co_return json_response(200, whole_list(std::move(items)));
        });
    keyed("POST", "/v1/api-keys",
          [this](const Principal& caller, Request& request, const PathParams&) {
            return create_api_key(caller, request);
          });
    keyed("GET", "/v1/nodes",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            if (auto allowed = require_operator(caller); !allowed)
              co_return problem_response(allowed.error());
            // Paged: a node's view carries its GPUs' latest telemetry, and rendering every node of
            // a large fleet at once held the controller's thread for seconds.
            auto limit = query_int(request, "limit", kDefaultListLimit, 1, kMaxListLimit);
            if (!limit) co_return problem_response(limit.error());
            const auto page = ctl().list_nodes(caller, query_string(request, "cursor").value_or(""),
                                               static_cast<size_t>(*limit));
            Json items = Json::array();
            for (const auto* node : page.items) items.push_back(node_view(ctl(), *node));
            co_return json_response(
                200, {{"items", std::move(items)},
                      {"next_cursor", page.next_cursor ? Json(*page.next_cursor) : Json(nullptr)}});
          });
    keyed("GET", "/v1/nodes/{id}",
          [this](const Principal& caller, Request&,
                 const PathParams& params) -> asio::awaitable<Response> {
            if (auto allowed = require_operator(caller); !allowed)
              co_return problem_response(allowed.error());
            auto node = ctl().node(caller, params.find("id")->second);
            co_return result_response(
                200, node, [this](const model::Node* n) { return node_view(ctl(), *n); });
          });
    node_action("/v1/nodes/{id}/cordon",
                [](Controller& c, const Principal& caller, std::string_view id) -> Result<int> {
                  GPURENT_CHECK(c.set_cordoned(caller, id, true));
                  return 0;
                });
    node_action("/v1/nodes/{id}/uncordon",
                [](Controller& c, const Principal& caller, std::string_view id) -> Result<int> {
                  GPURENT_CHECK(c.set_cordoned(caller, id, false));
                  return 0;
                });
    node_action("/v1/nodes/{id}/drain",
                [](Controller& c, const Principal& caller, std::string_view id) {
                  return c.drain_node(caller, id);
                });
    keyed("POST", "/v1/join-tokens",
          [this](const Principal& caller, Request& request, const PathParams&) {
            return create_join_token(caller, request);
          });
    router.add("POST", "/v1/agent/register",
               [this](Request& request, const PathParams&) { return register_node(request); });
    agent("GET", "/v1/agent/desired",
          [this](const std::string& node, Request& request) { return desired(node, request); });
    agent("POST", "/v1/agent/report",
          [this](const std::string& node, Request& request) { return report(node, request); });
    agent("POST", "/v1/agent/logs",
          [this](const std::string& node, Request& request) { return upload_logs(node, request); });
    agent("GET", "/v1/agent/upload", [this](const std::string& node, Request& request) {
      return download_upload(node, request);
    });
    keyed("POST", "/v1/uploads",
          [this](const Principal& caller, Request& request, const PathParams&) {
            return create_upload(caller, request);
          });
    keyed("PUT", "/v1/uploads/{id}",
          [this](const Principal& caller, Request& request, const PathParams& params) {
            return append_upload(caller, request, params.find("id")->second);
          });
    keyed("GET", "/v1/uploads/{id}",
          [this](const Principal& caller, Request&,
                 const PathParams& params) -> asio::awaitable<Response> {
            if (!uploads) co_return problem_response(uploads_unavailable());
            co_return result_response(
                200, uploads->get(caller.tenant_id, params.find("id")->second), upload_view);
          });
  }

  using InstanceCommand = Result<model::Instance> (Controller::*)(const Principal&,
                                                                  std::string_view);

  void instance_action(std::string pattern, std::string method, InstanceCommand command) {
    keyed(std::move(method), std::move(pattern),
          [this, command](const Principal& caller, Request&,
                          const PathParams& params) -> asio::awaitable<Response> {
            const std::string id = params.find("id")->second;
            auto result =
                co_await host.mutate([&](Controller& c) { return (c.*command)(caller, id); });
            co_return result_response(
                202, result, [this](const model::Instance& i) { return instance_view(ctl(), i); });
          });
  }

  // An operator command on a node; answers the node and how many instances it set moving.
  using NodeCommand = Result<int> (*)(Controller&, const Principal&, std::string_view);
  void node_action(std::string pattern, NodeCommand command) {
    keyed("POST", std::move(pattern),
          [this, command](const Principal& caller, Request&,
                          const PathParams& params) -> asio::awaitable<Response> {
            const std::string id = params.find("id")->second;
            auto result = co_await host.mutate([&](Controller& c) -> Result<Json> {
              GPURENT_TRY(moving, command(c, caller, id));
              GPURENT_TRY(node, c.node(caller, id));
              Json view = node_view(c, *node);
              view["moving_instances"] = moving;
              return view;
            });
            co_return result_response(200, result, [](const Json& view) { return view; });
          });
  }

  Json gpu_types() {
    std::map<std::string, controller::Offer> capacity;
    for (auto& offer : ctl().offers()) capacity.emplace(offer.gpu_type, offer);
    Json items = Json::array();
    for (const auto& type : model::gpu_catalog()) {
      const auto price = ctl().prices().on_demand_price(type.slug, ctl().current_time());
      const auto it = capacity.find(type.slug);
      items.push_back({{"slug", type.slug},
                       {"display_name", type.display_name},
                       {"memory_mb", type.memory_mb},
                       {"price_per_gpu_hour_micros", price ? Json(*price) : Json(nullptr)},
                       {"currency", ctl().options().currency},
                       {"total", it == capacity.end() ? 0 : it->second.total},
                       {"free", it == capacity.end() ? 0 : it->second.free}});
    }
    return whole_list(std::move(items));
  }

  // A request naming a template takes the template's runtime fields (model::apply_template),
  // its own image, command and env winning; `runtime` picks the template's process or container
  // form.
  Result<model::InstanceSpec> with_template(const Json& body, model::InstanceSpec spec) {
    GPURENT_TRY(name, optional_string(body, "template", model::kMaxTemplateNameLength));
    GPURENT_TRY(runtime, optional_string(body, "runtime", 16));
    model::RuntimeChoice choice = model::RuntimeChoice::kAuto;
    if (runtime && !model::parse_runtime_choice(*runtime, &choice)) {
      return fail(invalid_field("runtime", "must be auto, process or container"));
    }
    if (!name) {
      if (runtime)
        return fail(invalid_field("runtime", "chooses a template's form: give template"));
      return spec;
    }
    auto found = ctl().find_template(*name);
    if (!found) {
      return fail(Error::unprocessable(
          "template_not_found",
          fmt::format("there is no template '{}' (GET /v1/templates lists them)", *name)));
    }
    model::TemplateOverrides overrides;
    overrides.image = spec.image;
    if (has_value(body, "command")) overrides.command = spec.command;
    overrides.env = spec.env;
    overrides.services = spec.services;
    GPURENT_CHECK(model::apply_template(**found, choice, std::move(overrides), spec));
    return spec;
  }

  void add_template_routes() {
    keyed("GET", "/v1/templates",
          [this](const Principal&, Request&, const PathParams&) -> asio::awaitable<Response> {
            Json items = Json::array();
            for (const auto* t : ctl().templates()) items.push_back(template_view(*t));
            co_return json_response(200, whole_list(std::move(items)));
          });
    keyed(
        "GET", "/v1/templates/{name}",
        [this](const Principal&, Request&, const PathParams& params) -> asio::awaitable<Response> {
          auto found = ctl().find_template(params.find("name")->second);
          co_return result_response(200, found,
                                    [](const model::Template* t) { return template_view(*t); });
        });
    keyed("PUT", "/v1/templates/{name}",
          [this](const Principal& caller, Request& request,
                 const PathParams& params) -> asio::awaitable<Response> {
            co_return co_await operator_write(
                caller, request,
                [&](const Json& body) { return parse_template(body, params.find("name")->second); },
                [&](Controller& c, auto t) { return c.put_template(caller, std::move(t)); },
                template_view);
          });
    keyed("DELETE", "/v1/templates/{name}",
          [this](const Principal& caller, Request&,
                 const PathParams& params) -> asio::awaitable<Response> {
            const std::string name = params.find("name")->second;
            auto deleted = co_await host.mutate(
                [&](Controller& c) { return c.delete_template(caller, name); });
            if (!deleted) co_return problem_response(deleted.error());
            co_return Response{204, "", "", {}, {}};
          });
  }

  asio::awaitable<Response> create_instance(const Principal& caller, Request& request) {
    auto body = parse_json_object(request.body);
    if (!body) co_return problem_response(body.error());
    auto spec = parse_instance_spec(*body);
    if (spec) spec = with_template(*body, std::move(*spec));
    if (!spec) co_return problem_response(spec.error());
    if (auto workdir = check_workdir(caller, *spec); !workdir) {
      co_return problem_response(workdir.error());
    }
    auto key = idempotency_key(request);
    if (!key) co_return problem_response(key.error());
    const std::string fingerprint = hash_secret(body->dump());
    auto created = co_await host.mutate([&](Controller& c) {
      return c.create_instance(caller, std::move(*spec), *key, fingerprint);
    });
    if (!created) co_return problem_response(created.error());
    co_return created_response(instance_view(ctl(), created->instance),
                               "/v1/instances/" + created->instance.id, created->replayed);
  }

  Response list_instances(const Principal& caller, const Request& request) {
    auto limit = query_int(request, "limit", kDefaultListLimit, 1, kMaxListLimit);
    if (!limit) return problem_response(limit.error());
    controller::InstanceFilter filter;
    filter.tenant_id = tenant_query(request);
    filter.job_id = query_string(request, "job");
    if (auto state = query_string(request, "state")) {
      model::InstanceState parsed;
      if (!model::parse_instance_state(*state, &parsed)) {
        return problem_response(
            Error::invalid("invalid_query", fmt::format("unknown state '{}'", *state)));
      }
      filter.state = parsed;
    }
    auto page = ctl().list_instances(caller, filter, query_string(request, "cursor").value_or(""),
                                     static_cast<size_t>(*limit));
    if (!page) return problem_response(page.error());
    std::string body = R"({"items":[)";
    for (const auto* instance : page->items) {
      if (instance != page->items.front()) body += ',';
      body += instance_json(*instance);
    }
    body += R"(],"next_cursor":)";
    body += page->next_cursor ? Json(*page->next_cursor).dump() : "null";
    body += '}';
    return Response{200, "application/json", std::move(body), {}, {}};
  }

  // The serialized view of an instance, cached by revision: reads of instances dominate API
  // traffic, and building the JSON is most of their cost. Bounded: cleared when it grows past
  // kMaxCachedViews (it refills with what is read).
  const std::string& instance_json(const model::Instance& instance) {
    static constexpr size_t kMaxCachedViews = 100'000;
    if (instance_views.size() >= kMaxCachedViews && !instance_views.contains(instance.id)) {
      instance_views.clear();
    }
    CachedView& cached = instance_views[instance.id];
    if (cached.body.empty() || cached.revision != instance.revision) {
      cached = {instance.revision, instance_view(ctl(), instance).dump()};
    }
    return cached.body;
  }

  Response instance_logs(const Principal& caller, const Request& request, const std::string& id) {
    auto found = ctl().instance(caller, id);
    if (!found) return problem_response(found.error());
    const bool follow = query_string(request, "follow").value_or("false") == "true";
    // The stream reads run after run; when following it waits for more output until the instance
    // has ended and its last run's log is drained.
    struct Cursor {
      int64_t run = 1;
      int64_t offset = 0;
    };
    auto cursor = std::make_shared<Cursor>();
    Response response{200, "text/plain; charset=utf-8", "", {}, {}};
    response.chunks = [this, id, follow, cursor]() -> asio::awaitable<std::optional<std::string>> {
      for (;;) {
        const model::Instance* instance = *ctl().instance(model::platform_principal(), id);
        auto data = logs.read(id, cursor->run, cursor->offset, kLogChunkBytes);
        if (data && !data->empty()) {
          cursor->offset += static_cast<int64_t>(data->size());
          co_return std::move(*data);
        }
        if (cursor->run < instance->run) {
          cursor->run += 1;
          cursor->offset = 0;
          continue;
        }
        const bool ended = instance->state == model::InstanceState::kStopped ||
                           instance->state == model::InstanceState::kFailed ||
                           instance->state == model::InstanceState::kPreempted ||
                           instance->state == model::InstanceState::kTerminated;
        if (!follow || ended) co_return std::nullopt;
        co_await host.wait("instance:" + id, kFollowPoll);
      }
    };
    return response;
  }

  void add_job_routes() {
    keyed("POST", "/v1/jobs", [this](const Principal& caller, Request& request, const PathParams&) {
      return create_job(caller, request);
    });
    keyed("GET", "/v1/jobs",
          [this](const Principal& caller, Request& request, const PathParams&)
              -> asio::awaitable<Response> { co_return list_jobs(caller, request); });
    keyed("GET", "/v1/jobs/{id}",
          [this](const Principal& caller, Request& request,
                 const PathParams& params) -> asio::awaitable<Response> {
            auto all_tasks = query_flag(request, "tasks", false);
            if (!all_tasks) co_return problem_response(all_tasks.error());
            auto found = ctl().job(caller, params.find("id")->second);
            co_return result_response(
                200, found, [&](const model::Job* job) { return job_view(*job, *all_tasks); });
          });
    keyed("POST", "/v1/jobs/{id}/cancel",
          [this](const Principal& caller, Request&,
                 const PathParams& params) -> asio::awaitable<Response> {
            const std::string id = params.find("id")->second;
            auto result =
                co_await host.mutate([&](Controller& c) { return c.cancel_job(caller, id); });
            co_return result_response(202, result,
                                      [](const model::Job& job) { return job_view(job); });
          });
    keyed("GET", "/v1/jobs/{id}/logs",
          [this](const Principal& caller, Request& request,
                 const PathParams& params) -> asio::awaitable<Response> {
            co_return job_logs(caller, request, params.find("id")->second);
          });
  }

  // Packages, balance settings and invoices (controller/accounts.cc).
  void add_account_routes() {
    keyed("PUT", "/v1/packages/products",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            co_return co_await operator_write(
                caller, request, parse_package_product,
                [&](Controller& c, auto product) {
                  return c.set_package_product(caller, std::move(product));
                },
                [this](const model::PackageProduct& product) {
                  return package_product_view(product, ctl().options().currency);
                });
          });
    keyed("GET", "/v1/packages/products",
          [this](const Principal&, Request&, const PathParams&) -> asio::awaitable<Response> {
            Json items = Json::array();
            for (const auto* product : ctl().package_products()) {
              items.push_back(package_product_view(*product, ctl().options().currency));
            }
            co_return json_response(200, whole_list(std::move(items)));
          });
    keyed("POST", "/v1/packages",
          [this](const Principal& caller, Request& request, const PathParams&) {
            return create_object(
                caller, request, parse_package_purchase, &Controller::buy_package,
                [](const controller::CreatedPackage& created) {
                  return std::pair(package_view(created.package), created.replayed);
                },
                "/v1/packages/");
          });
    keyed("GET", "/v1/packages",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            auto tenant = billed_tenant(caller, request);
            if (!tenant) co_return problem_response(tenant.error());
            Json items = Json::array();
            for (const auto* package : ctl().packages(*tenant)) {
              items.push_back(package_view(*package));
            }
            co_return json_response(200, whole_list(std::move(items)));
          });
    keyed("GET", "/v1/packages/{id}",
          [this](const Principal& caller, Request&,
                 const PathParams& params) -> asio::awaitable<Response> {
            const std::string id = params.find("id")->second;
            for (const auto* package : ctl().packages(caller.tenant_id)) {
              if (package->id == id) {
                co_return json_response(200, package_view(*package));
              }
            }
            co_return problem_response(Error::not_found("package", id));
          });
    keyed("PUT", "/v1/billing/settings",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            co_return co_await operator_write(
                caller, request, parse_balance_settings,
                [&](Controller& c, auto settings) {
                  settings.tenant_id = c.tenant_id_for(settings.tenant_id);
                  return c.set_balance_settings(caller, std::move(settings));
                },
                [&](const model::BalanceSettings& settings) {
                  return balance_settings_view(settings, ctl().options().currency);
                });
          });
    keyed("GET", "/v1/billing/settings",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            auto tenant = billed_tenant(caller, request);
            if (!tenant) co_return problem_response(tenant.error());
            co_return json_response(200, balance_settings_view(ctl().balance_settings(*tenant),
                                                               ctl().options().currency));
          });
    keyed("GET", "/v1/billing/invoices",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            auto tenant = billed_tenant(caller, request);
            if (!tenant) co_return problem_response(tenant.error());
            auto months = ctl().invoice_months(caller, *tenant);
            if (!months) co_return problem_response(months.error());
            Json items = Json::array();
            for (const auto& month : *months) {
              auto invoice = ctl().invoice(caller, *tenant, month);
              if (!invoice) co_return problem_response(invoice.error());
              items.push_back(invoice_summary_view(*invoice));
            }
            co_return json_response(200, whole_list(std::move(items)));
          });
    keyed("GET", "/v1/billing/revenue",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            if (auto allowed = require_operator(caller); !allowed)
              co_return problem_response(allowed.error());
            auto report = revenue(caller, request);
            co_return result_response(200, report, [&](const billing::RevenueReport& r) {
              return Json{{"from", format_rfc3339(r.from)},
                          {"to", format_rfc3339(r.to)},
                          {"currency", ctl().options().currency},
                          {"total_micros", r.total},
                          {"credits_micros", r.credits},
                          {"by_gpu_type", r.by_gpu_type},
                          {"by_tenant", r.by_tenant}};
            });
          });
    keyed("GET", "/v1/billing/invoices/{id}",
          [this](const Principal& caller, Request& request,
                 const PathParams& params) -> asio::awaitable<Response> {
            auto tenant = billed_tenant(caller, request);
            if (!tenant) co_return problem_response(tenant.error());
            const std::string id = params.find("id")->second;
            const auto month = billing::parse_month(id);
            if (!month) co_return problem_response(Error::not_found("invoice", id));
            const auto format = query_string(request, "format");
            if (format && *format != "csv" && *format != "json") {
              co_return problem_response(
                  Error::invalid("invalid_query", "query parameter 'format' must be json or csv"));
            }
            auto invoice = ctl().invoice(caller, *tenant, *month);
            if (!invoice) co_return problem_response(invoice.error());
            const bool csv =
                format ? *format == "csv" : request.accept.find("text/csv") != std::string::npos;
            if (csv) {
              co_return Response{
                  200, "text/csv; charset=utf-8", billing::invoice_csv(*invoice), {}, {}};
            }
            co_return json_response(200, invoice_view(*invoice));
          });
  }

  // Revenue in [from, to) (RFC 3339 query parameters; by default all of it), by GPU type and
  // tenant: a run's type from its usage record, a package's or a reserved term's from it.
  Result<billing::RevenueReport> revenue(const Principal& caller, const Request& request) {
    billing::RevenueReport report;
    for (const auto& [name, fallback] : {std::pair{"from", from_unix_ms(0)},
                                         std::pair{"to", *parse_rfc3339("9999-12-31T23:59:59Z")}}) {
      Timestamp& bound = std::string_view(name) == "from" ? report.from : report.to;
      bound = fallback;
      if (const auto text = query_string(request, name)) {
        const auto parsed = parse_rfc3339(*text);
        if (!parsed) {
          return fail(Error::invalid("invalid_query",
                                     fmt::format("query parameter '{}' must be RFC 3339", name)));
        }
        bound = *parsed;
      }
    }
    if (report.to <= report.from) {
      return fail(Error::invalid("invalid_query", "'to' must be after 'from'"));
    }
    for (const auto* tenant : ctl().tenants(caller)) {
      // "<instance>:<run>", package or reservation id -> type
      std::map<std::string, std::string> type_of;
      for (const auto* reservation : ctl().reservations(caller)) {
        if (reservation->tenant_id == tenant->id) type_of[reservation->id] = reservation->gpu_type;
      }
      for (const auto* usage : ctl().usage(tenant->id)) {
        type_of[fmt::format("{}:{}", usage->instance_id, usage->run)] = usage->gpu_type;
      }
      for (const auto* package : ctl().packages(tenant->id)) {
        type_of[package->id] = package->gpu_type;
      }
      billing::add_revenue(report, ctl().transfers(tenant->id), [&](const model::Transfer& t) {
        if (t.id.starts_with("volume:")) return std::string("storage");
        // A usage id is "usage:<instance>:<run>:<seconds>"; a package's or a reservation's
        // transfers refer to it by id.
        std::string key = t.reference;
        if (t.id.starts_with("usage:")) key = t.id.substr(6, t.id.rfind(':') - 6);
        const auto it = type_of.find(key);
        return it == type_of.end() ? std::string("other") : it->second;
      });
    }
    return report;
  }

  void add_reservation_routes() {
    keyed("POST", "/v1/reservations",
          [this](const Principal& caller, Request& request, const PathParams&) {
            return create_reservation(caller, request);
          });
    keyed(
        "GET", "/v1/reservations",
        [this](const Principal& caller, Request&, const PathParams&) -> asio::awaitable<Response> {
          Json items = Json::array();
          for (const auto* reservation : ctl().reservations(caller)) {
            items.push_back(reservation_view(*reservation, ctl().options().currency));
          }
          co_return json_response(200, whole_list(std::move(items)));
        });
    keyed("DELETE", "/v1/reservations/{id}",
          [this](const Principal& caller, Request&,
                 const PathParams& params) -> asio::awaitable<Response> {
            const std::string id = params.find("id")->second;
            auto result = co_await host.mutate(
                [&](Controller& c) { return c.cancel_reservation(caller, id); });
            co_return result_response(200, result, [&](const model::Reservation& r) {
              return reservation_view(r, ctl().options().currency);
            });
          });
    keyed("POST", "/v1/reservations/quote",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            auto body = parse_json_object(request.body);
            if (!body) co_return problem_response(body.error());
            auto parsed = parse_reservation(*body);
            if (!parsed) co_return problem_response(parsed.error());
            co_return result_response(200, ctl().quote_reservation(caller, std::move(*parsed)),
                                      [&](const model::Reservation& r) {
                                        return reservation_view(r, ctl().options().currency);
                                      });
          });
  }

  void add_volume_routes() {
    keyed("POST", "/v1/volumes",
          [this](const Principal& caller, Request& request, const PathParams&) {
            return create_object(
                caller, request, parse_volume, &Controller::create_volume,
                [](const controller::CreatedVolume& created) {
                  return std::pair(volume_view(created.volume), created.replayed);
                },
                "/v1/volumes/");
          });
    keyed("GET", "/v1/volumes",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            Json items = Json::array();
            for (const auto* volume : ctl().volumes(caller, tenant_query(request))) {
              items.push_back(volume_view(*volume));
            }
            co_return json_response(200, whole_list(std::move(items)));
          });
    keyed("GET", "/v1/volumes/{id}",
          [this](const Principal& caller, Request&,
                 const PathParams& params) -> asio::awaitable<Response> {
            co_return result_response(200, ctl().volume(caller, params.find("id")->second),
                                      [](const model::Volume* v) { return volume_view(*v); });
          });
    keyed("DELETE", "/v1/volumes/{id}",
          [this](const Principal& caller, Request&,
                 const PathParams& params) -> asio::awaitable<Response> {
            const std::string id = params.find("id")->second;
            auto result =
                co_await host.mutate([&](Controller& c) { return c.delete_volume(caller, id); });
            if (!result) co_return problem_response(result.error());
            co_return Response{204, "", "", {}, {}};
          });
  }

  // The event log, oldest first; the cursor is the seq of the last event seen, so a client
  // polls for what is new with the next_cursor of its last page.
  void add_event_routes() {
    keyed("GET", "/v1/events",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            auto limit = query_int(request, "limit", kDefaultListLimit, 1, kMaxListLimit);
            if (!limit) co_return problem_response(limit.error());
            auto after = query_int(request, "cursor", 0, 0, std::numeric_limits<int64_t>::max());
            if (!after) co_return problem_response(after.error());
            controller::EventFilter filter{.tenant_id = tenant_query(request),
                                           .object_id = query_string(request, "object"),
                                           .kind = query_string(request, "kind"),
                                           .after_seq = *after};
            Json items = Json::array();
            const auto events = ctl().events(caller, filter, static_cast<size_t>(*limit));
            for (const auto* event : events) items.push_back(event_view(*event));
            Json next = events.size() == static_cast<size_t>(*limit)
                            ? Json(std::to_string(events.back()->seq))
                            : Json(nullptr);
            co_return json_response(
                200, {{"items", std::move(items)}, {"next_cursor", std::move(next)}});
          });
  }

  // The price book, the spot market and estimates (server/price_views.h has their forms).
  void add_price_routes() {
    keyed("GET", "/v1/prices",
          [this](const Principal&, Request&, const PathParams&) -> asio::awaitable<Response> {
            const Timestamp now = ctl().current_time();
            Json upcoming = Json::array();
            for (const auto* v : ctl().prices().upcoming(now)) {
              upcoming.push_back(price_version_view(*v));
            }
            co_return json_response(200, {{"current", price_version_view(ctl().prices().at(now))},
                                          {"upcoming", std::move(upcoming)}});
          });
    keyed("PUT", "/v1/prices",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            co_return co_await operator_write(
                caller, request, parse_price_change,
                [&](Controller& c, auto change) { return c.set_prices(caller, std::move(change)); },
                price_version_view);
          });
    keyed("GET", "/v1/prices/history",
          [this](const Principal&, Request&, const PathParams&) -> asio::awaitable<Response> {
            Json items = Json::array();
            for (const auto& v : ctl().prices().history()) items.push_back(price_version_view(v));
            co_return json_response(200, whole_list(std::move(items)));
          });
    keyed(
        "GET", "/v1/spot-prices",
        [this](const Principal&, Request& request, const PathParams&) -> asio::awaitable<Response> {
          co_return spot_prices(request);
        });
    keyed(
        "POST", "/v1/estimate",
        [this](const Principal&, Request& request, const PathParams&) -> asio::awaitable<Response> {
          auto body = parse_json_object(request.body);
          if (!body) co_return problem_response(body.error());
          auto spec = parse_instance_spec(*body);
          if (spec) spec = with_template(*body, std::move(*spec));
          if (!spec) co_return problem_response(spec.error());
          co_return result_response(200, ctl().estimate(*spec), [&](const auto& e) {
            return estimate_view(e, ctl().prices().currency());
          });
        });
  }

  // GET /v1/spot-prices?gpu_type=&from=&to=: the points of [from, to) (default: the last day),
  // with the one in force at `from` first, per type (all types, or one), and the price now.
  Response spot_prices(const Request& request) {
    const Timestamp now = ctl().current_time();
    const auto time_param = [&](const std::string& name, Timestamp fallback) -> Result<Timestamp> {
      const auto text = query_string(request, name);
      if (!text) return fallback;
      const auto t = parse_rfc3339(*text);
      if (!t) {
        return fail(Error::invalid(
            "invalid_query", fmt::format("query parameter '{}' must be an RFC 3339 time", name)));
      }
      return *t;
    };
    auto from = time_param("from", now - std::chrono::hours(24));
    if (!from) return problem_response(from.error());
    auto to = time_param("to", now + Millis(1));
    if (!to) return problem_response(to.error());
    if (*to <= *from) {
      return problem_response(Error::invalid("invalid_query", "'to' must be after 'from'"));
    }
    std::vector<std::string> types;
    if (auto type = query_string(request, "gpu_type")) {
      if (!ctl().prices().on_demand_price(*type, now)) {
        return problem_response(Error::not_found("gpu_type", *type));
      }
      types.push_back(*type);
    } else {
      for (const auto& [type, price] : ctl().prices().at(now).gpu_per_hour) types.push_back(type);
    }
    const auto& market = ctl().spot_market();
    Json items = Json::array();
    for (const auto& type : types) {
      Json points = Json::array();
      for (const auto& point : market.history(type, *from, *to)) {
        points.push_back(
            spot_point_view(point, market.price_at(ctl().prices(), type, point.at).value_or(0)));
      }
      const auto on_demand = ctl().prices().on_demand_price(type, now);
      items.push_back(
          {{"gpu_type", type},
           {"current_per_gpu_hour_micros", market.price_at(ctl().prices(), type, now).value_or(0)},
           {"floor_per_gpu_hour_micros",
            billing::spot_price(on_demand.value_or(0), ctl().prices().at(now).spot_floor_permille,
                                0)},
           {"cap_per_gpu_hour_micros", on_demand.value_or(0)},
           {"points", std::move(points)}});
    }
    return json_response(200, {{"items", std::move(items)},
                               {"currency", ctl().prices().currency()},
                               {"next_cursor", nullptr}});
  }

  // Telemetry queries, alerts and their rules (monitoring_api.h), and the Prometheus page.
  // GPU quarantine (controller/quarantine.cc): operators put a quarantined GPU back in service;
  // the answer is the node's view.
  void add_quarantine_routes() {
    keyed("POST", "/v1/nodes/{id}/gpus/{index}/release",
          [this](const Principal& caller, Request&,
                 const PathParams& params) -> asio::awaitable<Response> {
            const std::string id = params.find("id")->second;
            const std::string& text = params.find("index")->second;
            // Not a device index: names no GPU (404 gpu_not_found), as an index the node lacks.
            int index = -1;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
            if (ec != std::errc() || end != text.data() + text.size()) index = -1;
            auto result = co_await host.mutate([&](Controller& c) -> Result<Json> {
              GPURENT_CHECK(c.release_gpu(caller, id, index));
              GPURENT_TRY(node, c.node(caller, id));
              return node_view(c, *node);
            });
            co_return result_response(200, result, [](const Json& view) { return view; });
          });
  }

  void add_monitoring_routes() {
    router.add("GET", "/metrics",
               [this](Request& request, const PathParams&) -> asio::awaitable<Response> {
                 if (!metrics_token.empty() && bearer_token(request) != metrics_token) {
                   co_return problem_response(
                       unauthenticated("send 'Authorization: Bearer <metrics token>'"));
                 }
                 co_return Response{200,
                                    "text/plain; version=0.0.4; charset=utf-8",
                                    render_metrics(ctl(), request_metrics),
                                    {},
                                    {}};
               });
    keyed("GET", "/v1/metrics/query",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            auto query = parse_metrics_query(request.query);
            if (!query) co_return problem_response(query.error());
            auto answer = ctl().query_metrics(caller, *query);
            co_return result_response(200, answer, [&](const controller::MetricsAnswer& a) {
              return metrics_answer_view(*query, a);
            });
          });
    keyed("GET", "/v1/alerts",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            auto limit = query_int(request, "history", kDefaultListLimit, 0,
                                   static_cast<int64_t>(controller::kMaxAlertHistory));
            if (!limit) co_return problem_response(limit.error());
            co_return json_response(
                200, alert_list_view(ctl().alerts(caller, static_cast<size_t>(*limit))));
          });
    keyed("POST", "/v1/alerts/{id}/ack",
          [this](const Principal& caller, Request&,
                 const PathParams& params) -> asio::awaitable<Response> {
            const std::string id = params.find("id")->second;
            auto acked = co_await host.mutate(
                [&](Controller& c) { return c.acknowledge_alert(caller, id); });
            if (!acked) co_return problem_response(acked.error());
            co_return json_response(200, {{"id", id}, {"acknowledged", true}});
          });
    keyed(
        "GET", "/v1/alerts/rules",
        [this](const Principal& caller, Request&, const PathParams&) -> asio::awaitable<Response> {
          co_return result_response(200, ctl().alert_rules(caller), rule_list_view);
        });
    keyed("POST", "/v1/alerts/rules",
          [this](const Principal& caller, Request& request,
                 const PathParams&) -> asio::awaitable<Response> {
            co_return co_await operator_write(
                caller, request, monitor::rule_from_json,
                [&](Controller& c, auto rule) { return c.put_alert_rule(caller, std::move(rule)); },
                monitor::rule_to_json);
          });
    keyed("DELETE", "/v1/alerts/rules/{name}",
          [this](const Principal& caller, Request&,
                 const PathParams& params) -> asio::awaitable<Response> {
            const std::string name = params.find("name")->second;
            auto deleted = co_await host.mutate(
                [&](Controller& c) { return c.delete_alert_rule(caller, name); });
            if (!deleted) co_return problem_response(deleted.error());
            co_return Response{204, "", "", {}, {}};
          });
    keyed("PUT", "/v1/instances/{id}/idle-alert",
          [this](const Principal& caller, Request& request,
                 const PathParams& params) -> asio::awaitable<Response> {
            auto body = parse_json_object(request.body);
            if (!body) co_return problem_response(body.error());
            auto idle = parse_idle_alert(*body);
            if (!idle) co_return problem_response(idle.error());
            const std::string id = params.find("id")->second;
            auto saved = co_await host.mutate([&](Controller& c) {
              return c.set_idle_alert(caller, id, idle->below_percent, idle->for_ms,
                                      idle->auto_stop);
            });
            co_return result_response(200, saved, monitor::rule_to_json);
          });
  }

  void add_quota_routes() {
    keyed("PUT", "/v1/tenants/{id}/quota",
          [this](const Principal& caller, Request& request, const PathParams& params) {
            return set_quota(caller, request, ctl().tenant_id_for(params.find("id")->second));
          });
    keyed("GET", "/v1/tenants/{id}/quota",
          [this](const Principal& caller, Request&,
                 const PathParams& params) -> asio::awaitable<Response> {
            co_return result_response(
                200, ctl().quota(caller, ctl().tenant_id_for(params.find("id")->second)),
                quota_view);
          });
  }

  // Paginated like the instances: a listing of thousands of jobs is thousands of views.
  Response list_jobs(const Principal& caller, const Request& request) {
    auto limit = query_int(request, "limit", kDefaultListLimit, 1, kMaxListLimit);
    if (!limit) return problem_response(limit.error());
    controller::JobFilter filter;
    filter.tenant_id = tenant_query(request);
    if (auto state = query_string(request, "state")) {
      model::JobState parsed;
      if (!model::parse_job_state(*state, &parsed)) {
        return problem_response(
            Error::invalid("invalid_query", fmt::format("unknown state '{}'", *state)));
      }
      filter.state = parsed;
    }
    auto page = ctl().list_jobs(caller, filter, query_string(request, "cursor").value_or(""),
                                static_cast<size_t>(*limit));
    if (!page) return problem_response(page.error());
    Json items = Json::array();
    for (const auto* job : page->items) items.push_back(job_view(*job));
    return json_response(
        200, {{"items", std::move(items)},
              {"next_cursor", page->next_cursor ? Json(*page->next_cursor) : Json(nullptr)}});
  }

  asio::awaitable<Response> create_job(const Principal& caller, Request& request) {
    auto body = parse_json_object(request.body);
    if (!body) co_return problem_response(body.error());
    auto spec = parse_job_spec(*body);
    if (spec) {
      auto task = with_template(*body, std::move(spec->task));
      if (task) {
        spec->task = std::move(*task);
      } else {
        spec = fail(std::move(task).error());
      }
    }
    if (!spec) co_return problem_response(spec.error());
    if (auto workdir = check_workdir(caller, spec->task); !workdir) {
      co_return problem_response(workdir.error());
    }
    auto key = idempotency_key(request);
    if (!key) co_return problem_response(key.error());
    const std::string fingerprint = hash_secret(body->dump());
    auto created = co_await host.mutate(
        [&](Controller& c) { return c.create_job(caller, std::move(*spec), *key, fingerprint); });
    if (!created) co_return problem_response(created.error());
    co_return created_response(job_view(created->job), "/v1/jobs/" + created->job.id,
                               created->replayed);
  }

  // The log of one member (task and rank) of a job: that member instance's log, served as
  // GET /v1/instances/{id}/logs serves it.
  Response job_logs(const Principal& caller, const Request& request, const std::string& id) {
    auto found = ctl().job(caller, id);
    if (!found) return problem_response(found.error());
    const model::Job& job = **found;
    auto task = query_int(request, "task", 0, 0, job.spec.array - 1);
    if (!task) return problem_response(task.error());
    auto rank = query_int(request, "rank", 0, 0, job.spec.nodes - 1);
    if (!rank) return problem_response(rank.error());
    const auto index = static_cast<size_t>(*task);
    const auto member = static_cast<size_t>(*rank);
    if (index >= job.tasks.size() || member >= job.tasks[index].members.size()) {
      return problem_response(Error::conflict(
          "invalid_state",
          fmt::format("task {} of job {} has no member of rank {}", *task, id, *rank)));
    }
    return instance_logs(caller, request, job.tasks[index].members[member]);
  }

  asio::awaitable<Response> create_reservation(const Principal& caller, Request& request) {
    return create_object(
        caller, request, parse_reservation, &Controller::create_reservation,
        [this](const controller::CreatedReservation& created) {
          return std::pair(reservation_view(created.reservation, ctl().options().currency),
                           created.replayed);
        },
        "/v1/reservations/");
  }

  // A POST that creates an object under Idempotency-Key: parse the body, run the controller's
  // create command with the key and the body's fingerprint, answer 201 with the view (and the
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
    auto created = co_await host.mutate(
        [&](Controller& c) { return (c.*create)(caller, std::move(*parsed), *key, fingerprint); });
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
    auto result = co_await host.mutate([&](Controller& c) { return apply(c, std::move(*parsed)); });
    co_return result_response(200, result, view);
  }

  asio::awaitable<Response> set_quota(const Principal& caller, Request& request,
                                      std::string tenant_id) {
    co_return co_await operator_write(
        caller, request, [&](const Json& body) { return parse_quota(body, std::move(tenant_id)); },
        [&](Controller& c, auto quota) { return c.set_quota(caller, std::move(quota)); },
        quota_view);
  }

  asio::awaitable<Response> topup(const Principal& caller, Request& request) {
    auto body = parse_json_object(request.body);
    if (!body) co_return problem_response(body.error());
    if (auto known = reject_unknown_fields(*body, {"tenant_id", "amount_micros", "reference"});
        !known) {
      co_return problem_response(known.error());
    }
    auto tenant = required_string(*body, "tenant_id", kMaxNameLength);
    if (!tenant) co_return problem_response(tenant.error());
    auto amount = required_int(*body, "amount_micros", 1, int64_t{1'000'000'000} * kMicrosPerUnit);
    if (!amount) co_return problem_response(amount.error());
    auto reference = optional_string(*body, "reference", 256);
    if (!reference) co_return problem_response(reference.error());
    auto key = idempotency_key(request);
    if (!key) co_return problem_response(key.error());
    auto result = co_await host.mutate([&](Controller& c) {
      return c.topup(caller, c.tenant_id_for(*tenant), *amount, reference->value_or(""), *key);
    });
    co_return result_response(201, result, [&](const controller::TopupResult& r) {
      return Json{{"transfer_id", r.transfer.id},
                  {"tenant_id", r.transfer.tenant_id},
                  {"amount_micros", r.transfer.amount},
                  {"balance_micros", r.balance},
                  {"currency", ctl().options().currency}};
    });
  }

  asio::awaitable<Response> create_tenant(const Principal& caller, Request& request) {
    auto body = parse_json_object(request.body);
    if (!body) co_return problem_response(body.error());
    if (auto known = reject_unknown_fields(*body, {"name"}); !known)
      co_return problem_response(known.error());
    auto name = required_string(*body, "name", kMaxNameLength);
    if (!name) co_return problem_response(name.error());
    if (!valid_name(*name)) {
      co_return problem_response(
          invalid_field("name", "may hold only letters, digits, '-', '_' and '.'"));
    }
    auto tenant =
        co_await host.mutate([&](Controller& c) { return c.create_tenant(caller, *name); });
    co_return result_response(201, tenant, [](const model::Tenant& t) { return tenant_view(t); });
  }

  asio::awaitable<Response> create_api_key(const Principal& caller, Request& request) {
    auto body = parse_json_object(request.body);
    if (!body) co_return problem_response(body.error());
    if (auto known = reject_unknown_fields(*body, {"tenant_id", "role", "name"}); !known) {
      co_return problem_response(known.error());
    }
    auto tenant = optional_string(*body, "tenant_id", kMaxNameLength);
    auto role_text = optional_string(*body, "role", 16);
    auto name = optional_string(*body, "name", kMaxNameLength);
    for (const auto* field : {&tenant, &role_text, &name}) {
      if (!*field) co_return problem_response(field->error());
    }
    controller::NewApiKey key;
    key.tenant_id = ctl().tenant_id_for(tenant->value_or(""));
    if (*role_text && !model::parse_role(**role_text, &key.role)) {
      co_return problem_response(invalid_field("role", "must be admin, operator or tenant"));
    }
    key.name = name->value_or("");
    const std::string secret = new_secret("gpr_");
    key.secret_hash = hash_secret(secret);
    key.prefix = secret.substr(0, 12);
    auto created = co_await host.mutate(
        [&](Controller& c) { return c.create_api_key(caller, std::move(key)); });
    co_return result_response(201, created, [&](const model::ApiKey& k) {
      Json view = api_key_view(k);
      view["key"] = secret;
      return view;
    });
  }

  asio::awaitable<Response> create_join_token(const Principal& caller, Request& request) {
    auto body = parse_json_object(request.body.empty() ? "{}" : request.body);
    if (!body) co_return problem_response(body.error());
    if (auto known = reject_unknown_fields(*body, {"description", "ttl_s"}); !known) {
      co_return problem_response(known.error());
    }
    auto description = optional_string(*body, "description", 256);
    if (!description) co_return problem_response(description.error());
    auto ttl = optional_int(*body, "ttl_s", 60, 365 * 24 * 3600);
    if (!ttl) co_return problem_response(ttl.error());
    const std::string secret = new_secret("gjt_");
    auto token = co_await host.mutate([&](Controller& c) {
      return c.create_join_token(caller, description->value_or(""),
                                 std::chrono::seconds(ttl->value_or(24 * 3600)),
                                 hash_secret(secret));
    });
    co_return result_response(201, token, [&](const model::JoinToken& t) {
      return Json{{"id", t.id},
                  {"token", secret},
                  {"description", t.description},
                  {"expires_at", format_rfc3339(t.expires_at)}};
    });
  }

  asio::awaitable<Response> register_node(Request& request) {
    const auto token = bearer_token(request);
    if (!token)
      co_return problem_response(unauthenticated("send 'Authorization: Bearer <join token>'"));
    auto body = parse_json_object(request.body);
    if (!body) co_return problem_response(body.error());
    auto registration = model::decode_message<model::NodeRegistration>(*body);
    if (!registration) co_return problem_response(registration.error());
    registration->registered_from = request.peer_address;
    const std::string credential = new_secret("gnc_");
    auto result = co_await host.mutate([&](Controller& c) {
      return c.register_node(hash_secret(*token), std::move(*registration), credential,
                             hash_secret(credential));
    });
    co_return result_response(201, result,
                              [](const model::RegistrationResult& r) { return Json(r); });
  }

  asio::awaitable<Response> desired(const std::string& node, Request& request) {
    auto after = query_int(request, "after", 0, 0, INT64_MAX);
    if (!after) co_return problem_response(after.error());
    auto watch = query_flag(request, "watch", false);
    if (!watch) co_return problem_response(watch.error());
    if (*watch) co_return watch_desired(node, *after);
    auto wait_s = query_int(request, "wait_s", 0, 0, kMaxLongPoll.count());
    if (!wait_s) co_return problem_response(wait_s.error());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(*wait_s);
    for (;;) {
      auto generation = ctl().desired_generation(node);
      if (!generation) co_return problem_response(generation.error());
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (*generation > *after || left.count() <= 0) {
        // Built now, before the barrier: everything in it was queued for commit before it. The
        // node is woken as soon as its change is queued (host.h), so the answer is built while
        // the committer writes that change.
        auto state = ctl().desired_state(node);
        if (!state) co_return problem_response(state.error());
        std::string answer = model::desired_state_json(*state);
        // Only committed state may be acted on: were this set lost in a crash, the agent would
        // run work the restarted server never placed.
        if (!host.all_durable()) co_await host.durable();
        co_return Response{200, "application/json", std::move(answer), {}, {}};
      }
      co_await host.wait("node:" + node, left);
    }
  }

  // The node's desired states as a stream (model/agent_protocol.h): one line per generation
  // above the last one sent, each built and made durable as a long poll's answer is.
  Response watch_desired(const std::string& node, int64_t after) {
    if (auto generation = ctl().desired_generation(node); !generation) {
      return problem_response(generation.error());
    }
    Response response{200, "application/x-ndjson", "", {}, {}};
    auto sent = std::make_shared<int64_t>(after);
    response.chunks = [this, node, sent]() -> asio::awaitable<std::optional<std::string>> {
      const auto keepalive_at = std::chrono::steady_clock::now() + model::kWatchKeepalive;
      for (;;) {
        auto generation = ctl().desired_generation(node);
        if (!generation) co_return std::nullopt;  // the node is gone: the stream ends
        if (*generation > *sent) {
          auto state = ctl().desired_state(node);
          if (!state) co_return std::nullopt;
          std::string line = model::desired_state_json(*state);
          line += '\n';
          *sent = state->generation;
          if (!host.all_durable()) co_await host.durable();
          co_return line;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            keepalive_at - std::chrono::steady_clock::now());
        if (left.count() <= 0) co_return std::string("\n");
        co_await host.wait("node:" + node, left);
      }
    };
    return response;
  }

  asio::awaitable<Response> report(const std::string& node, Request& request) {
    // Read, and its telemetry decoded and ingested, on the telemetry thread.
    auto report = co_await telemetry_ingest.take(node, std::move(request.body));
    if (!report) co_return problem_response(report.error());
    proxy.node_reported(node, report->node_api_address, report->node_api_secret);
    if (report->workloads.size() > kMaxReportedWorkloads) {
      co_return problem_response(
          Error::invalid("invalid_message", "too many workloads in one report"));
    }
    auto generation =
        co_await host.mutate([&](Controller& c) { return c.apply_report(node, *report); });
    co_return result_response(200, generation, [](int64_t g) { return Json{{"generation", g}}; });
  }

  // Runs `work` on the log thread; awaiting the result resumes on the caller's (I/O) thread.
  template <class Work>
  auto on_log_thread(Work work) {
    return net::await_on(log_thread, std::move(work));
  }

  struct LogWrite {
    Result<int64_t> size;  // after the append
    int64_t current = 0;   // the stored size, when the append left a gap
  };

  asio::awaitable<Response> upload_logs(const std::string& node, const Request& request) {
    const auto id = query_string(request, "instance");
    auto run = query_int(request, "run", 0, 1, INT64_MAX);
    auto offset = query_int(request, "offset", 0, 0, INT64_MAX);
    if (!id)
      co_return problem_response(
          Error::invalid("invalid_query", "query parameter 'instance' is required"));
    if (!run) co_return problem_response(run.error());
    if (*run < 1)
      co_return problem_response(
          Error::invalid("invalid_query", "query parameter 'run' is required"));
    if (!offset) co_return problem_response(offset.error());
    auto instance = ctl().instance(model::platform_principal(), *id);
    if (!instance || (*instance)->node_id != node || *run > (*instance)->run) {
      co_return problem_response(Error::not_found("instance", *id));
    }
    // The request outlives the write: the coroutine holding it waits for the answer.
    auto write = [this, id = *id, run = *run, offset = *offset,
                  data = std::string_view(request.body)] {
      LogWrite written{logs.append(id, run, offset, data), 0};
      if (!written.size && written.size.error().code == "log_offset_gap") {
        written.current = logs.size(id, run);
      }
      return written;
    };
    LogWrite written = co_await on_log_thread(std::move(write));
    if (!written.size) {
      if (written.size.error().code == "log_offset_gap") {
        co_return json_response(409, {{"size", written.current}});
      }
      co_return problem_response(written.size.error());
    }
    host.notify("instance:" + *id);
    co_return json_response(200, {{"size", *written.size}});
  }

  static Error uploads_unavailable() {
    return Error{ErrorKind::kUnavailable, "uploads_unavailable", "this server keeps no uploads"};
  }

  // A spec's workdir must be a complete upload of the caller's tenant.
  Status check_workdir(const Principal& caller, const model::InstanceSpec& spec) {
    if (spec.workdir.empty()) return {};
    if (!uploads) return fail(uploads_unavailable());
    auto upload = uploads->get_complete(caller.tenant_id, spec.workdir);
    if (!upload) return fail(std::move(upload).error());
    return {};
  }

  // POST /v1/uploads {"size", "sha256"}: declares an upload (server/upload_store.h).
  asio::awaitable<Response> create_upload(const Principal& caller, Request& request) {
    if (!uploads) co_return problem_response(uploads_unavailable());
    auto body = parse_json_object(request.body);
    if (!body) co_return problem_response(body.error());
    if (auto known = reject_unknown_fields(*body, {"size", "sha256"}); !known) {
      co_return problem_response(known.error());
    }
    auto size = required_int(*body, "size", INT64_MIN, INT64_MAX);
    if (!size) co_return problem_response(size.error());
    auto sha256 = required_string(*body, "sha256", 128);
    if (!sha256) co_return problem_response(sha256.error());
    // Named, not a temporary in the co_await: GCC 12 destroys such temporaries twice.
    auto create = [this, tenant = caller.tenant_id, size = *size, sha256 = *sha256] {
      return uploads->create(tenant, size, sha256);
    };
    auto created = co_await on_log_thread(std::move(create));
    if (!created) co_return problem_response(created.error());
    Response response = json_response(201, upload_view(*created));
    response.headers.emplace_back("Location", "/v1/uploads/" + created->id);
    co_return response;
  }

  // PUT /v1/uploads/{id}?offset=N with the next bytes as the body.
  asio::awaitable<Response> append_upload(const Principal& caller, const Request& request,
                                          std::string id) {
    if (!uploads) co_return problem_response(uploads_unavailable());
    auto offset = query_int(request, "offset", 0, 0, kMaxUploadBytes);
    if (!offset) co_return problem_response(offset.error());
    auto append = [this, tenant = caller.tenant_id, id = std::move(id), offset = *offset,
                   bytes = std::string_view(request.body)] {
      return uploads->append(tenant, id, offset, bytes);
    };
    auto appended = co_await on_log_thread(std::move(append));
    co_return result_response(200, appended, upload_view);
  }

  // GET /v1/agent/upload?id=: a complete upload that an instance on this node unpacks, or that a
  // copy into an instance or volume on it was granted (proxy.h).
  asio::awaitable<Response> download_upload(const std::string& node, const Request& request) {
    if (!uploads) co_return problem_response(uploads_unavailable());
    const auto id = query_string(request, "id").value_or("");
    if (!ctl().node_uses_workdir(node, id) && !proxy.node_may_read(node, id)) {
      co_return problem_response(Error::not_found("upload", id));
    }
    auto read = [this, id] { return uploads->read(id); };
    auto bytes = co_await on_log_thread(std::move(read));
    if (!bytes) co_return problem_response(bytes.error());
    co_return Response{200, "application/octet-stream", std::move(*bytes), {}, {}};
  }

  static std::string_view openapi_document();
};

}  // namespace gpurent::server

namespace gpurent::embedded {
std::string_view openapi_document();
}

namespace gpurent::server {

std::string_view Api::Impl::openapi_document() { return embedded::openapi_document(); }

Api::Api(ControllerHost& host, LogStore& logs, SessionSigner sessions)
    : impl_(std::make_unique<Impl>(host, logs, std::move(sessions))) {}

net::Forwarder Api::forwarder() {
  return {.claims = &TenantProxy::claims,
          .decide = [this](net::RequestHead head) { return impl_->proxy.decide(std::move(head)); }};
}
Api::~Api() = default;

asio::awaitable<Response> Api::handle(Request request) {
  // Every route's latency is measured here, by its pattern (not its path: ids would make the
  // label set unbounded).
  const auto start = std::chrono::steady_clock::now();
  auto match = impl_->router.match(request.method, request.path);
  const std::string method = request.method;
  // Not a conditional expression: GCC miscompiles a co_await inside one.
  Response response;
  if (match) {
    response = co_await (*match->handler)(request, match->params);
  } else {
    response = problem_response(match.error());
  }
  impl_->request_metrics.observe(method, match ? match->pattern : std::string_view("unmatched"),
                                 response.status,
                                 std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::steady_clock::now() - start));
  co_return response;
}

void Api::set_metrics_token(std::string token) { impl_->metrics_token = std::move(token); }

void Api::set_bind_node_credentials(bool bind) { impl_->bind_node_credentials = bind; }

void Api::set_uploads(UploadStore* uploads) {
  impl_->uploads = uploads;
  impl_->proxy.set_uploads(uploads);
}

std::vector<std::pair<std::string, std::string>> Api::routes() const {
  auto routes = impl_->router.table();
  routes.emplace_back("POST", "/v1/instances/{id}/exec");
  routes.emplace_back("POST", "/v1/instances/{id}/files");
  routes.emplace_back("POST", "/v1/volumes/{id}/files");
  for (const char* method : {"GET", "POST", "PUT", "PATCH", "DELETE"}) {
    routes.emplace_back(method, "/i/{id}/{service}/{path}");
  }
  return routes;
}

}  // namespace gpurent::server
