#include "client/api_client.h"
#include "common/random.h"
#include "common/url.h"

#include <fmt/format.h>

#include <cctype>

namespace gpurent::client {
namespace {

constexpr int kPageSize = 500;  // the API's largest page
constexpr size_t kMaxErrorSnippet = 200;

// An id or cursor put in a path or query: it can never change their shape.
std::string encode(std::string_view text) { return percent_encode(text); }

void add_query(std::string& query, std::string_view key, std::string_view value) {
  if (value.empty()) return;
  if (!query.empty()) query.push_back('&');
  query += fmt::format("{}={}", key, encode(value));
}

ErrorKind kind_for_status(int status) {
  switch (status) {
    case 400:
      return ErrorKind::kInvalidArgument;
    case 401:
      return ErrorKind::kUnauthenticated;
    case 402:
      return ErrorKind::kPaymentRequired;
    case 403:
      return ErrorKind::kPermissionDenied;
    case 404:
      return ErrorKind::kNotFound;
    case 405:
      return ErrorKind::kMethodNotAllowed;
    case 409:
      return ErrorKind::kConflict;
    case 413:
      return ErrorKind::kPayloadTooLarge;
    case 422:
      return ErrorKind::kUnprocessable;
    // A proxy in front of a server that is down or restarting.
    case 502:
    case 503:
    case 504:
      return ErrorKind::kUnavailable;
    default:
      return status >= 500 || status < 400 ? ErrorKind::kInternal : ErrorKind::kInvalidArgument;
  }
}

// The first line of a body that is not a problem document, cut short and without control
// characters, so an HTML error page of a proxy still says something readable.
std::string snippet(std::string_view body) {
  std::string out;
  for (const char c : body.substr(0, body.find('\n'))) {
    if (out.size() == kMaxErrorSnippet) {
      out += "...";
      break;
    }
    out.push_back(static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c);
  }
  return out;
}

std::string string_field(const Json& object, std::string_view key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Error bad_response(std::string_view request, std::string_view why) {
  return {ErrorKind::kInternal, "bad_response", fmt::format("{}: {}", request, why)};
}

}  // namespace

Error error_from_response(const HttpResponse& response, std::string_view request) {
  const ErrorKind kind = kind_for_status(response.status);
  // The body decides, not the Content-Type: stream() cannot tell the caller the latter, and a
  // problem document is recognisable by itself.
  const Json problem = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (problem.is_object()) {
    std::string code = string_field(problem, "code");
    std::string detail = string_field(problem, "detail");
    if (detail.empty()) detail = string_field(problem, "title");
    if (!code.empty() || !detail.empty()) {
      if (code.empty()) code = fmt::format("http_{}", response.status);
      if (detail.empty()) detail = fmt::format("{} answered HTTP {}", request, response.status);
      return {kind, std::move(code), std::move(detail)};
    }
  }
  const std::string text = snippet(response.body);
  return {kind, fmt::format("http_{}", response.status),
          fmt::format("{} answered HTTP {}{}{}", request, response.status, text.empty() ? "" : ": ",
                      text)};
}

Result<ApiClient> ApiClient::create(std::string_view base_url, std::string api_key) {
  GPURENT_TRY(http, HttpClient::create(base_url));
  return ApiClient(std::move(http), std::move(api_key));
}

Result<Json> ApiClient::call(std::string_view method, std::string target, const Json* body,
                             std::string_view idempotency_key, std::chrono::seconds timeout) {
  HttpRequest request{.method = std::string(method), .target = std::move(target)};
  if (body != nullptr) {
    request.body = body->dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  if (!api_key_.empty()) request.headers.emplace_back("Authorization", "Bearer " + api_key_);
  if (!idempotency_key.empty()) {
    request.headers.emplace_back("Idempotency-Key", std::string(idempotency_key));
  }
  request.headers.emplace_back("Accept", "application/json");
  GPURENT_TRY(response, http_.send(request, timeout));
  const std::string what = fmt::format("{} {}{}", method, base_url(), request.target);
  if (response.status < 200 || response.status >= 300) {
    return fail(error_from_response(response, what));
  }
  if (response.body.empty()) return Json::object();
  auto parsed = parse_json_object(response.body);
  if (!parsed) return fail(bad_response(what, parsed.error().message));
  return std::move(*parsed);
}

Result<Json> ApiClient::fetch_all_pages(std::string_view path, const std::string& query) {
  Json joined;
  std::string cursor;
  for (int page = 0; page < kMaxListPages; ++page) {
    std::string page_query = fmt::format("limit={}", kPageSize);
    if (!query.empty()) page_query += "&" + query;
    add_query(page_query, "cursor", cursor);
    GPURENT_TRY(body, call("GET", fmt::format("{}?{}", path, page_query)));
    const auto items = body.find("items");
    if (items == body.end() || !items->is_array()) {
      return fail(bad_response(fmt::format("GET {}{}", base_url(), path), "the list has no items"));
    }
    cursor = string_field(body, "next_cursor");
    if (page == 0) {
      joined = std::move(body);
    } else {
      for (auto& item : *items) joined["items"].push_back(std::move(item));
    }
    if (cursor.empty()) {
      joined["next_cursor"] = nullptr;
      return joined;
    }
  }
  return fail(Error{ErrorKind::kInternal, "list_too_long",
                    fmt::format("GET {}{}: more than {} pages of {} items", base_url(), path,
                                kMaxListPages, kPageSize)});
}

Result<Json> ApiClient::list_items(std::string_view path, const std::string& query) {
  GPURENT_TRY(joined, fetch_all_pages(path, query));
  return std::move(joined["items"]);
}

Result<Json> ApiClient::whoami() { return call("GET", "/v1/whoami"); }
Result<Json> ApiClient::gpu_types() { return list_items("/v1/gpu-types"); }
Result<Json> ApiClient::offers() { return list_items("/v1/offers"); }

namespace {

// The API's body for what a workload runs and needs; members at their defaults are left out.
api::WorkloadRequest workload_request(const model::InstanceSpec& spec,
                                      model::RuntimeChoice runtime) {
  const auto unless = [](bool is_default, const auto& value) {
    using T = std::remove_cvref_t<decltype(value)>;
    return is_default ? std::nullopt : std::optional<T>(value);
  };
  api::WorkloadRequest request{
      .name = unless(spec.name.empty(), spec.name),
      .min_gpu_memory_gb = unless(spec.min_gpu_memory_gb == 0, int64_t{spec.min_gpu_memory_gb}),
      .gpu_count = spec.gpu_count,
      .gpu_milli = unless(spec.gpu_milli == model::kMilliPerGpu, int64_t{spec.gpu_milli}),
      .gpu_memory_gb = unless(spec.gpu_memory_gb == 0, int64_t{spec.gpu_memory_gb}),
      .cpu = unless(spec.cpu == 0, int64_t{spec.cpu}),
      .memory_gb = unless(spec.memory_gb == 0, int64_t{spec.memory_gb}),
      .disk_gb = unless(spec.disk_gb == 0, int64_t{spec.disk_gb}),
      .node_selector = unless(spec.node_selector.empty(), spec.node_selector),
      .image = unless(spec.image.empty(), spec.image),
      .env = unless(spec.env.empty(), spec.env),
      .pricing = spec.pricing,
      .reservation_id = unless(spec.reservation_id.empty(), spec.reservation_id),
      .priority = unless(spec.priority == 0, int64_t{spec.priority}),
      .max_runtime_s = spec.max_runtime_s,
      .template_name = unless(spec.template_name.empty(), spec.template_name),
      .runtime = unless(runtime == model::RuntimeChoice::kAuto, runtime),
      .volumes = unless(spec.volumes.empty(), spec.volumes),
      .services = unless(spec.services.empty(), spec.services),
      .max_price_micros = spec.max_price,
      .workdir = unless(spec.workdir.empty(), spec.workdir),
      .queue = unless(spec.queue, false),
      .wait_for_capacity = unless(!spec.wait_for_capacity, true)};
  if (spec.gpu_types.size() > 1) {
    request.gpu_types = spec.gpu_types;
  } else {
    request.gpu_type = model::requested_gpu_type(spec);
  }
  if (!spec.command.empty()) request.command = spec.command;
  return request;
}

}  // namespace

Result<Answer<api::Instance>> ApiClient::create_instance(const model::InstanceSpec& spec,
                                                         std::string_view idempotency_key,
                                                         model::RuntimeChoice runtime) {
  const Json body = api::InstanceCreate{workload_request(spec, runtime)};
  return typed<api::Instance>(call("POST", "/v1/instances", &body, idempotency_key));
}

Result<Json> ApiClient::estimate(const model::InstanceSpec& spec, model::RuntimeChoice runtime) {
  const Json body = api::InstanceCreate{workload_request(spec, runtime)};
  return call("POST", "/v1/estimate", &body);
}

Result<Json> ApiClient::prices() { return call("GET", "/v1/prices"); }

Result<Json> ApiClient::set_prices(const Json& change) {
  return call("PUT", "/v1/prices", &change);
}

Result<Json> ApiClient::price_history() { return list_items("/v1/prices/history"); }

Result<Json> ApiClient::spot_prices(std::string_view gpu_type, std::string_view from,
                                    std::string_view to) {
  std::string query;
  add_query(query, "gpu_type", gpu_type);
  add_query(query, "from", from);
  add_query(query, "to", to);
  return call("GET", query.empty() ? "/v1/spot-prices" : "/v1/spot-prices?" + query);
}

Result<Answer<std::vector<api::Instance>>> ApiClient::list_instances(const InstanceFilter& filter) {
  std::string query;
  add_query(query, "tenant", filter.tenant_id);
  add_query(query, "state", filter.state);
  return typed<std::vector<api::Instance>>(list_items("/v1/instances", query));
}

Result<Answer<api::Instance>> ApiClient::get_instance(std::string_view id) {
  return typed<api::Instance>(call("GET", "/v1/instances/" + encode(id)));
}

Result<Answer<api::Instance>> ApiClient::stop_instance(std::string_view id) {
  return typed<api::Instance>(call("POST", fmt::format("/v1/instances/{}/stop", encode(id))));
}

Result<Answer<api::Instance>> ApiClient::start_instance(std::string_view id) {
  return typed<api::Instance>(call("POST", fmt::format("/v1/instances/{}/start", encode(id))));
}

Result<Answer<api::Instance>> ApiClient::delete_instance(std::string_view id) {
  return typed<api::Instance>(call("DELETE", "/v1/instances/" + encode(id)));
}

Status ApiClient::stream_logs(std::string_view id, bool follow,
                              const std::function<bool(std::string_view)>& on_chunk) {
  return stream_text(
      fmt::format("/v1/instances/{}/logs{}", encode(id), follow ? "?follow=true" : ""), follow,
      on_chunk);
}

Status ApiClient::stream_text(std::string target, bool follow,
                              const std::function<bool(std::string_view)>& on_chunk) {
  HttpRequest request{.target = std::move(target)};
  if (!api_key_.empty()) request.headers.emplace_back("Authorization", "Bearer " + api_key_);
  const auto idle = follow ? std::chrono::milliseconds(kFollowIdleTimeout)
                           : std::chrono::milliseconds(kCallTimeout);
  GPURENT_TRY(answer, http_.stream(request, on_chunk, idle));
  if (answer.status >= 300) {
    return fail(error_from_response(answer, fmt::format("GET {}{}", base_url(), request.target)));
  }
  return {};
}

Result<Json> ApiClient::service_ticket(std::string_view id, std::string_view service) {
  return call("POST",
              fmt::format("/v1/instances/{}/services/{}/ticket", encode(id), encode(service)));
}

Result<model::ExecFrame> ApiClient::exec(
    std::string_view id, const model::ExecRequest& exec,
    const std::function<void(const model::ExecFrame&)>& on_output) {
  HttpRequest request{.method = "POST", .target = fmt::format("/v1/instances/{}/exec", encode(id))};
  request.body = Json{{"command", exec.command}, {"timeout_s", exec.timeout_s}}.dump(
      -1, ' ', false, Json::error_handler_t::replace);
  if (!api_key_.empty()) request.headers.emplace_back("Authorization", "Bearer " + api_key_);
  model::ExecFrameReader reader;
  std::optional<model::ExecFrame> exit;
  std::optional<Error> broken;
  // Output may pause for as long as the command runs quietly; the timeout ends it on the node.
  const auto idle = std::chrono::seconds(exec.timeout_s) + kCallTimeout;
  GPURENT_TRY(answer, http_.stream(
                          request,
                          [&](std::string_view piece) {
                            auto frames = reader.feed(piece);
                            if (!frames) {
                              broken = frames.error();
                              return false;
                            }
                            for (auto& frame : *frames) {
                              if (frame.kind == model::ExecFrame::Kind::kExit) {
                                exit = std::move(frame);
                              } else {
                                on_output(frame);
                              }
                            }
                            return true;
                          },
                          idle));
  const std::string what = fmt::format("POST {}{}", base_url(), request.target);
  if (answer.status >= 300) return fail(error_from_response(answer, what));
  if (broken) return fail(bad_response(what, broken->message));
  if (!exit) {
    return fail(
        Error{ErrorKind::kUnavailable, "exec_interrupted",
              fmt::format("the output of {} ended before the command's exit status", what)});
  }
  return std::move(*exit);
}

Result<Json> ApiClient::upload(std::string_view bytes) {
  const Json declared = {{"size", bytes.size()}, {"sha256", sha256_hex(bytes)}};
  GPURENT_TRY(upload, call("POST", "/v1/uploads", &declared));
  const std::string target = "/v1/uploads/" + string_field(upload, "id");
  // The server may answer with an upload of the same bytes begun earlier: go on from its end.
  int64_t received = upload.value("received", int64_t{0});
  int failures = 0;
  while (!upload.value("complete", false)) {
    const auto piece = bytes.substr(static_cast<size_t>(received), kUploadPieceBytes);
    HttpRequest request{.method = "PUT",
                        .target = fmt::format("{}?offset={}", target, received),
                        .body = std::string(piece),
                        .content_type = "application/octet-stream"};
    if (!api_key_.empty()) request.headers.emplace_back("Authorization", "Bearer " + api_key_);
    auto response = http_.send(request, kCallTimeout);
    if (!response || response->status == 409) {
      // A lost connection, or a piece the server already has: ask where it stands, go on there.
      if (++failures > kMaxUploadRetries) {
        return response ? fail(error_from_response(*response, "PUT " + target))
                        : fail(std::move(response).error());
      }
      GPURENT_TRY(status, call("GET", target));
      upload = std::move(status);
      received = upload.value("received", int64_t{0});
      continue;
    }
    if (response->status != 200) return fail(error_from_response(*response, "PUT " + target));
    auto parsed = parse_json_object(response->body);
    if (!parsed) return fail(bad_response("PUT " + target, parsed.error().message));
    upload = std::move(*parsed);
    received = upload.value("received", int64_t{0});
  }
  return upload;
}

Result<Json> ApiClient::copy_into(std::string_view collection, std::string_view id,
                                  std::string_view upload_id, std::string_view path) {
  return call("POST",
              fmt::format("/v1/{}/{}/files?upload={}&path={}", collection, encode(id),
                          encode(upload_id), encode(path)),
              nullptr, {}, kCopyCallTimeout);
}

Result<Json> ApiClient::copy_into_instance(std::string_view id, std::string_view upload_id,
                                           std::string_view path) {
  return copy_into("instances", id, upload_id, path);
}

Result<Json> ApiClient::copy_into_volume(std::string_view id, std::string_view upload_id,
                                         std::string_view path) {
  return copy_into("volumes", id, upload_id, path);
}

Result<Answer<api::Job>> ApiClient::create_job(const model::JobSpec& spec,
                                               std::string_view idempotency_key,
                                               model::RuntimeChoice runtime) {
  api::JobCreate request{.workload = workload_request(spec.task, runtime)};
  if (spec.nodes != 1) request.nodes = spec.nodes;
  if (spec.array != 1) request.array = spec.array;
  if (spec.retries != 0) request.retries = spec.retries;
  const Json body = request;
  return typed<api::Job>(call("POST", "/v1/jobs", &body, idempotency_key));
}

Result<Answer<std::vector<api::Job>>> ApiClient::list_jobs(std::string_view tenant_id) {
  std::string query;
  add_query(query, "tenant", tenant_id);
  return typed<std::vector<api::Job>>(list_items("/v1/jobs", query));
}

Result<Answer<api::Job>> ApiClient::get_job(std::string_view id, bool all_tasks) {
  return typed<api::Job>(
      call("GET", fmt::format("/v1/jobs/{}{}", encode(id), all_tasks ? "?tasks=1" : "")));
}

Result<Answer<api::Job>> ApiClient::cancel_job(std::string_view id) {
  return typed<api::Job>(call("POST", fmt::format("/v1/jobs/{}/cancel", encode(id))));
}

Status ApiClient::stream_job_logs(std::string_view id, JobMember member, bool follow,
                                  const std::function<bool(std::string_view)>& on_chunk) {
  return stream_text(fmt::format("/v1/jobs/{}/logs?task={}&rank={}{}", encode(id), member.task,
                                 member.rank, follow ? "&follow=true" : ""),
                     follow, on_chunk);
}

namespace {

Json reservation_body(const ReservationRequest& request) {
  Json body = {{"gpu_type", request.gpu_type},
               {"gpu_count", request.gpu_count},
               {"start", format_rfc3339(request.start)}};
  if (request.term_days) {
    body["term_days"] = *request.term_days;
  } else {
    body["end"] = format_rfc3339(request.end);
  }
  if (!request.payment.empty()) body["payment"] = request.payment;
  if (!request.tenant_id.empty()) body["tenant_id"] = request.tenant_id;
  return body;
}

}  // namespace

Result<Json> ApiClient::create_reservation(const ReservationRequest& request) {
  Json body = reservation_body(request);
  return call("POST", "/v1/reservations", &body);
}

Result<Json> ApiClient::quote_reservation(const ReservationRequest& request) {
  Json body = reservation_body(request);
  return call("POST", "/v1/reservations/quote", &body);
}

Result<Json> ApiClient::list_reservations() { return list_items("/v1/reservations"); }

Result<Json> ApiClient::cancel_reservation(std::string_view id) {
  return call("DELETE", "/v1/reservations/" + encode(id));
}

Result<Answer<api::Volume>> ApiClient::create_volume(const VolumeRequest& request,
                                                     std::string_view idempotency_key) {
  const Json body = api::VolumeCreate{
      .name = request.name,
      .size_gb = request.size_gb,
      .node_id = request.node_id.empty() ? std::nullopt : std::optional(request.node_id)};
  return typed<api::Volume>(call("POST", "/v1/volumes", &body, idempotency_key));
}

Result<Answer<std::vector<api::Volume>>> ApiClient::list_volumes() {
  return typed<std::vector<api::Volume>>(list_items("/v1/volumes"));
}

Result<Json> ApiClient::list_events(std::string_view object_id, std::string_view kind) {
  std::string query;
  add_query(query, "object", object_id);
  add_query(query, "kind", kind);
  return list_items("/v1/events", query);
}

Result<Json> ApiClient::query_metrics(
    const std::vector<std::pair<std::string, std::string>>& query) {
  std::string text;
  for (const auto& [key, value] : query) add_query(text, key, value);
  return call("GET", "/v1/metrics/query?" + text);
}

Result<Json> ApiClient::list_alerts() { return call("GET", "/v1/alerts"); }

Result<Json> ApiClient::list_alert_rules() { return list_items("/v1/alerts/rules"); }

Result<Json> ApiClient::put_alert_rule(const Json& rule) {
  return call("POST", "/v1/alerts/rules", &rule);
}

Status ApiClient::delete_alert_rule(std::string_view name) {
  GPURENT_CHECK(call("DELETE", "/v1/alerts/rules/" + encode(name)));  // 204: nothing to show
  return {};
}

Result<Json> ApiClient::acknowledge_alert(std::string_view id) {
  return call("POST", "/v1/alerts/" + encode(id) + "/ack");
}

Result<Answer<api::Volume>> ApiClient::get_volume(std::string_view id) {
  return typed<api::Volume>(call("GET", "/v1/volumes/" + encode(id)));
}

Result<Json> ApiClient::delete_volume(std::string_view id) {
  return call("DELETE", "/v1/volumes/" + encode(id));
}

Result<Json> ApiClient::set_quota(std::string_view tenant_id, const Json& quota) {
  return call("PUT", fmt::format("/v1/tenants/{}/quota", encode(tenant_id)), &quota);
}

Result<Json> ApiClient::get_quota(std::string_view tenant_id) {
  return call("GET", fmt::format("/v1/tenants/{}/quota", encode(tenant_id)));
}

Result<Json> ApiClient::list_templates() { return list_items("/v1/templates", {}); }

Result<Json> ApiClient::get_template(std::string_view name) {
  return call("GET", "/v1/templates/" + encode(name));
}

Result<Json> ApiClient::put_template(std::string_view name, const Json& t) {
  return call("PUT", "/v1/templates/" + encode(name), &t);
}

Status ApiClient::delete_template(std::string_view name) {
  GPURENT_CHECK(call("DELETE", "/v1/templates/" + encode(name)));  // 204: nothing to show
  return {};
}

Result<Answer<api::Balance>> ApiClient::balance(std::string_view tenant_id) {
  std::string query;
  add_query(query, "tenant", tenant_id);
  return typed<api::Balance>(
      call("GET", query.empty() ? "/v1/billing/balance" : "/v1/billing/balance?" + query));
}

Result<Answer<api::Usage>> ApiClient::usage() {
  return typed<api::Usage>(fetch_all_pages("/v1/billing/usage"));
}
Result<Json> ApiClient::transfers() { return list_items("/v1/billing/transfers"); }

Result<Json> ApiClient::topup(std::string_view tenant_id, Micros amount, std::string_view reference,
                              std::string_view idempotency_key) {
  Json body = {{"tenant_id", tenant_id}, {"amount_micros", amount}};
  if (!reference.empty()) body["reference"] = reference;
  return call("POST", "/v1/billing/topups", &body, idempotency_key);
}

namespace {

std::string tenant_query(std::string_view tenant_id) {
  std::string query;
  add_query(query, "tenant", tenant_id);
  return query;
}

}  // namespace

Result<Json> ApiClient::package_products() { return list_items("/v1/packages/products"); }

Result<Json> ApiClient::set_package_product(const Json& product) {
  return call("PUT", "/v1/packages/products", &product);
}

Result<Json> ApiClient::buy_package(std::string_view product, std::string_view idempotency_key) {
  const Json body = {{"product", product}};
  return call("POST", "/v1/packages", &body, idempotency_key);
}

Result<Json> ApiClient::list_packages(std::string_view tenant_id) {
  return list_items("/v1/packages", tenant_query(tenant_id));
}

Result<Json> ApiClient::balance_settings(std::string_view tenant_id) {
  const std::string query = tenant_query(tenant_id);
  return call("GET", "/v1/billing/settings" + (query.empty() ? "" : "?" + query));
}

Result<Json> ApiClient::set_balance_settings(const Json& settings) {
  return call("PUT", "/v1/billing/settings", &settings);
}

Result<Json> ApiClient::list_invoices(std::string_view tenant_id) {
  return list_items("/v1/billing/invoices", tenant_query(tenant_id));
}

Result<Json> ApiClient::get_invoice(std::string_view id, std::string_view tenant_id) {
  const std::string query = tenant_query(tenant_id);
  return call("GET", "/v1/billing/invoices/" + encode(id) + (query.empty() ? "" : "?" + query));
}

Result<std::string> ApiClient::get_invoice_csv(std::string_view id, std::string_view tenant_id) {
  std::string query = tenant_query(tenant_id);
  add_query(query, "format", "csv");
  std::string csv;
  GPURENT_CHECK(stream_text("/v1/billing/invoices/" + encode(id) + "?" + query, false,
                            [&](std::string_view chunk) {
                              csv += chunk;
                              return true;
                            }));
  return csv;
}

Result<Json> ApiClient::revenue(std::string_view from, std::string_view to) {
  std::string query;
  add_query(query, "from", from);
  add_query(query, "to", to);
  return call("GET", "/v1/billing/revenue" + (query.empty() ? "" : "?" + query));
}

Result<Answer<api::Tenant>> ApiClient::create_tenant(std::string_view name) {
  const Json body = api::TenantCreate{.name = std::string(name)};
  return typed<api::Tenant>(call("POST", "/v1/tenants", &body));
}

Result<Answer<std::vector<api::TenantWithBalance>>> ApiClient::list_tenants() {
  return typed<std::vector<api::TenantWithBalance>>(list_items("/v1/tenants"));
}

Result<Answer<api::ApiKeyCreated>> ApiClient::create_api_key(const ApiKeyRequest& request) {
  const auto unless_empty = [](const std::string& text) {
    return text.empty() ? std::nullopt : std::optional(text);
  };
  api::ApiKeyCreate create{.tenant_id = unless_empty(request.tenant_id),
                           .name = unless_empty(request.name)};
  if (!request.role.empty() && !model::parse_role(request.role, &create.role.emplace())) {
    return fail(invalid_field("role", "must be admin, operator or tenant"));
  }
  const Json body = create;
  return typed<api::ApiKeyCreated>(call("POST", "/v1/api-keys", &body));
}

Result<Answer<std::vector<api::Node>>> ApiClient::list_nodes() {
  return typed<std::vector<api::Node>>(list_items("/v1/nodes"));
}

Result<Answer<api::Node>> ApiClient::node_action(std::string_view id, std::string_view action) {
  return typed<api::Node>(call("POST", fmt::format("/v1/nodes/{}/{}", encode(id), action)));
}

Result<Answer<api::Node>> ApiClient::release_gpu(std::string_view node_id, int gpu_index) {
  return typed<api::Node>(
      call("POST", fmt::format("/v1/nodes/{}/gpus/{}/release", encode(node_id), gpu_index)));
}

Result<Answer<api::Node>> ApiClient::get_node(std::string_view id) {
  return typed<api::Node>(call("GET", "/v1/nodes/" + encode(id)));
}

Result<Json> ApiClient::create_join_token(std::string_view description,
                                          std::optional<int64_t> ttl_s) {
  Json body = Json::object();
  if (!description.empty()) body["description"] = description;
  if (ttl_s) body["ttl_s"] = *ttl_s;
  return call("POST", "/v1/join-tokens", &body);
}

}  // namespace gpurent::client
