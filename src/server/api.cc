#include "server/api_impl.h"

#include <spdlog/spdlog.h>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <unordered_map>
#include "api/accounts.h"
#include "api/fleet.h"
#include "api/openapi_document.h"
#include "common/random.h"
#include "model/agent_protocol.h"
#include "model/codec.h"
#include "model/gpu_catalog.h"
#include "model/service_path.h"
#include "model/workload_fields.h"
#include "monitor/alerts_json.h"
#include "server/price_views.h"
#include "server/upload_store.h"
#include "server/views.h"

namespace gpurent::server {

Result<std::optional<std::string>> Api::Impl::tenant_query(const Principal& caller,
                                                           const Request& request) const {
  auto tenant = query_string(request, "tenant");
  if (!tenant) return tenant;
  std::string id = host.controller().accounts().tenant_id_for(caller, *tenant);
  if (!caller.is_operator() && id != caller.tenant_id) {
    return fail(Error::not_found("tenant", *tenant));
  }
  return std::optional(std::move(id));
}

Result<Principal> Api::Impl::principal(const Request& request) {
  if (request.authorization.empty()) {
    if (auto session = console.authenticate(ctl(), BrowserRequest::of(request))) {
      return std::move(*session);
    }
  }
  return authenticate_api_key(ctl(), request.authorization);
}

Status Api::Impl::agent_certificate(const Request& request) const {
  if (!agents_need_certificates || !request.client_certificate.empty()) return {};
  return fail(Error{
      ErrorKind::kUnauthenticated, "client_certificate_required",
      "agents connect with a client certificate signed by the server's client CA (mutual TLS)"});
}

Result<std::string> Api::Impl::node_of(const Request& request) {
  GPURENT_CHECK(agent_certificate(request));
  const auto token = bearer_token(request);
  if (!token) return fail(unauthenticated("send 'Authorization: Bearer <node credential>'"));
  auto found = ctl().fleet().nodes().authenticate(hash_secret(*token));
  if (!found) return fail(unauthenticated("unknown node credential"));
  // A credential copied off its node is refused from anywhere else, when the operator asks.
  if (bind_node_credentials) {
    const std::string_view from = ctl().fleet().nodes().registered_from(*found);
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

Result<std::string> Api::Impl::billed_tenant(const Principal& caller, const Request& request) {
  GPURENT_TRY(named, tenant_query(caller, request));
  std::string tenant = named.value_or(caller.tenant_id);
  GPURENT_CHECK(ctl().accounts().balance(caller, tenant));
  return tenant;
}

asio::awaitable<Response> Api::Impl::call_keyed(const KeyedRoute& route, Request& request,
                                                const PathParams& params) {
  auto caller = principal(request);
  std::optional<AuditedCall> audited;
  if (route.access.audited) audited.emplace(*this, request);
  Response response;
  if (!caller) {
    response = problem_response(caller.error());
  } else if (auto allowed = route.access.permits(*caller); !allowed) {
    response = problem_response(allowed.error());
  } else if (auto fits = body_within_quota(*caller, request); !fits) {
    response = problem_response(fits.error());
  } else {
    const RateDecision rate = rate_limiter.admit_key(caller->key_id, route.access.creates);
    // Not a conditional expression: GCC miscompiles a co_await inside one.
    if (rate.allowed) {
      response = co_await route.handler(*caller, request, params);
    } else {
      response = problem_response(rate.error());
    }
    std::ranges::move(rate.headers(), std::back_inserter(response.headers));
  }
  if (route.access.audited)
    co_await audit(caller ? &*caller : nullptr, request, route.action, response);
  co_return response;
}

Status Api::Impl::body_within_quota(const Principal& caller, const Request& request) {
  const model::Quota* quota = ctl().accounts().quotas().of(caller.tenant_id);
  if (quota == nullptr || !quota->max_body_bytes ||
      request.body.size() <= static_cast<size_t>(*quota->max_body_bytes)) {
    return {};
  }
  return fail(Error{ErrorKind::kPayloadTooLarge, "payload_too_large",
                    fmt::format("the tenant's quota allows request bodies of at most {} bytes",
                                *quota->max_body_bytes)});
}

namespace {

// "ok", or the code of the problem answered (its status when it has none).
std::string outcome_of(const Response& response) {
  if (response.status < 400) return "ok";
  const Json problem = Json::parse(response.body, nullptr, false);
  const auto code = problem.is_object() ? problem.find("code") : problem.end();
  return code != problem.end() && code->is_string() ? code->get<std::string>()
                                                    : std::to_string(response.status);
}

}  // namespace

asio::awaitable<void> Api::Impl::audit(const Principal* caller, const Request& request,
                                       std::string_view action, const Response& response) {
  std::string outcome = outcome_of(response);
  co_await audit(caller, request.peer_address, request.path, action, response.status,
                 std::move(outcome));
}

asio::awaitable<void> Api::Impl::audit(const Principal* caller, std::string_view address,
                                       std::string_view target, std::string_view action, int status,
                                       std::string outcome) {
  model::AuditRecord entry{
      .tenant_id = caller ? caller->tenant_id : std::string(),
      .key_id = caller ? caller->key_id : std::string(),
      .role = caller ? std::string(model::to_string(caller->role)) : std::string(),
      .address = std::string(address),
      .action = std::string(action),
      .target = std::string(target.substr(0, model::kMaxAuditTargetLength)),
      .status = status,
      .outcome = std::move(outcome)};
  host.apply([&](Controller& c) { return c.audit().record(std::move(entry)).seq; });
  co_await host.commit_applied();
}

void Api::Impl::gate_forwarded_writes() {
  proxy.set_write_gate(
      {.admit = [this](const Principal& caller) -> std::optional<Response> {
         const RateDecision rate = rate_limiter.admit_key(caller.key_id, false);
         if (rate.allowed) return std::nullopt;
         Response refused = problem_response(rate.error());
         std::ranges::move(rate.headers(), std::back_inserter(refused.headers));
         return refused;
       },
       .audit = [this](const Principal* caller, const net::RequestHead& head,
                       std::string_view action,
                       const net::ForwardDecision& decision) -> asio::awaitable<void> {
         // Named first: GCC 12 miscompiles a conditional expression in a co_await'd call.
         int status = 0;
         std::string outcome = "forwarded";
         if (const auto* answer = std::get_if<Response>(&decision)) {
           status = answer->status;
           outcome = outcome_of(*answer);
         }
         co_await audit(caller, head.peer_address, head.path, action, status, std::move(outcome));
       }});
}

RouteAccess Api::Impl::access_of(std::string_view method, std::string_view pattern) {
  auto access = route_access(method, pattern);
  GPURENT_ASSERT(access.has_value(), "route {} {} is in no access area (server/access.cc)", method,
                 pattern);
  return *access;
}

Status Api::Impl::require_operator(const Principal& caller) {
  if (caller.is_operator()) return {};
  return fail(Error{ErrorKind::kPermissionDenied, "forbidden", "this route is for operators"});
}

void Api::Impl::add_routes() {
  router.add("GET", "/healthz", [](Request&, const PathParams&) -> asio::awaitable<Response> {
    co_return json_response(200, {{"status", "ok"}});
  });
  router.add("GET", "/v1/openapi.json",
             [](Request&, const PathParams&) -> asio::awaitable<Response> {
               co_return Response{200, "application/json", std::string(openapi_document()), {}, {}};
             });
  keyed("GET", "/v1/whoami",
        [](const Principal& caller, Request&, const PathParams&) -> asio::awaitable<Response> {
          co_return json_response(200, api::Whoami{.tenant_id = caller.tenant_id,
                                                   .key_id = caller.key_id,
                                                   .role = caller.role,
                                                   .scopes = caller.scopes.names()});
        });
  keyed("GET", "/v1/gpu-types",
        [this](const Principal&, Request&, const PathParams&) -> asio::awaitable<Response> {
          co_return json_response(200, gpu_types());
        });
  keyed("GET", "/v1/offers",
        [this](const Principal&, Request& request, const PathParams&) -> asio::awaitable<Response> {
          const auto order = offer_order(query_string(request, "sort").value_or("gpu_type"));
          if (!order) co_return problem_response(order.error());
          std::vector<Json> items;
          for (const auto& offer : ctl().fleet().offers()) {
            items.push_back(offer_view(ctl(), offer));
          }
          std::ranges::stable_sort(items, *order);
          co_return json_response(200, whole_list(Json(std::move(items))));
        });
  add_console_routes();
  add_instance_routes();
  add_job_routes();
  add_reservation_routes();
  add_volume_routes();
  add_quota_routes();
  add_template_routes();
  add_event_routes();
  add_audit_routes();
  add_price_routes();
  add_account_routes();
  add_monitoring_routes();
  add_quarantine_routes();
  add_billing_routes();
  add_tenant_routes();
  add_node_routes();
  add_agent_routes();
  add_upload_routes();
}

Json Api::Impl::gpu_types() {
  std::map<std::string, controller::Offer> capacity;
  for (auto& offer : ctl().fleet().offers()) capacity.emplace(offer.gpu_type, offer);
  Json items = Json::array();
  for (const auto& type : model::gpu_catalog()) {
    const auto price = ctl().pricing().book().on_demand_price(type.slug, ctl().pricing().now());
    const auto it = capacity.find(type.slug);
    items.push_back(api::GpuType{.slug = type.slug,
                                 .display_name = type.display_name,
                                 .memory_mb = type.memory_mb,
                                 .price_per_gpu_hour_micros = price,
                                 .currency = ctl().options().currency,
                                 .total = it == capacity.end() ? 0 : it->second.total,
                                 .free = it == capacity.end() ? 0 : it->second.free});
  }
  return whole_list(std::move(items));
}

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
  const std::string peer = request.peer_address;
  // Agents are limited by nothing here: a cluster behind one address reports through it.
  const RateDecision admitted = request.path.starts_with("/v1/agent/")
                                    ? RateDecision{}
                                    : impl_->rate_limiter.admit_address(peer);
  // Not a conditional expression: GCC miscompiles a co_await inside one.
  Response response;
  if (!admitted.allowed) {
    response = problem_response(admitted.error());
    std::ranges::move(admitted.headers(), std::back_inserter(response.headers));
  } else if (match) {
    response = co_await (*match->handler)(request, match->params);
  } else {
    response = problem_response(match.error());
  }
  impl_->rate_limiter.answered(peer, response.status);
  impl_->request_metrics.observe(method, match ? match->pattern : std::string_view("unmatched"),
                                 response.status,
                                 std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::steady_clock::now() - start));
  co_return response;
}

void Api::set_metrics_token(std::string token) { impl_->metrics_token = std::move(token); }
void Api::set_outbound(const OutboundPolicy& outbound) { impl_->outbound = outbound; }

void Api::set_bind_node_credentials(bool bind) { impl_->bind_node_credentials = bind; }

void Api::set_agents_need_certificates(bool need) { impl_->agents_need_certificates = need; }

void Api::set_rate_limits(const RateLimitConfig& config) {
  impl_->rate_limiter = RateLimiter(config, impl_->rate_clock);
}

void Api::set_uploads(UploadStore* uploads) {
  impl_->uploads = uploads;
  impl_->proxy.set_uploads(uploads);
}

std::vector<std::pair<std::string, std::string>> Api::routes() const {
  auto routes = impl_->router.table();
  routes.emplace_back("POST", "/v1/instances/{id}/exec");
  routes.emplace_back("POST", "/v1/instances/{id}/files");
  routes.emplace_back("POST", "/v1/volumes/{id}/files");
  routes.emplace_back("GET", "/v1/instances/{id}/ssh");
  for (const char* method : {"GET", "POST", "PUT", "PATCH", "DELETE"}) {
    routes.emplace_back(method, "/i/{id}/{service}/{path}");
  }
  return routes;
}

}  // namespace gpurent::server
