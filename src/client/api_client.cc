#include "client/api_client.h"

#include <fmt/format.h>

#include "client/api_transport.h"
#include "common/random.h"

namespace gpurent::client {
namespace {

using detail::add_query;
using detail::bad_response;
using detail::encode;
using detail::string_field;

// The JSON of an answer, read into T (a struct of src/api/, or a vector of them).
template <class T>
Result<Answer<T>> typed(Result<Json> json) {
  if (!json) return fail(std::move(json).error());
  T value = json->template get<T>();
  return Answer<T>{std::move(value), std::move(*json)};
}

// A route that answers 204: nothing to read.
Status no_content(Result<Json> json) {
  GPURENT_CHECK(std::move(json));
  return {};
}

// "tenant=<id>", or "" for the caller's own tenant.
std::string tenant_query(std::string_view tenant_id) {
  std::string query;
  add_query(query, "tenant", tenant_id);
  return query;
}

// "?<query>", or "" when there is none.
std::string with_query(const std::string& query) { return query.empty() ? "" : "?" + query; }

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
      .ssh_keys = unless(spec.ssh_keys.empty(), spec.ssh_keys),
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

// POST /v1/{collection}/{id}/files: unpack the upload at `path` (copy_into_instance, _volume).
Result<Answer<model::CopyResult>> copy_into(ApiTransport& transport, std::string_view collection,
                                            std::string_view id, std::string_view upload_id,
                                            std::string_view path) {
  return typed<model::CopyResult>(
      transport.call("POST",
                     fmt::format("/v1/{}/{}/files?upload={}&path={}", collection, encode(id),
                                 encode(upload_id), encode(path)),
                     nullptr, {}, kCopyCallTimeout));
}

}  // namespace

// ApiClient

Result<ApiClient> ApiClient::create(std::string_view base_url, std::string api_key) {
  GPURENT_TRY(http, HttpClient::create(base_url));
  return ApiClient(std::make_unique<ApiTransport>(std::move(http), std::move(api_key)));
}

ApiClient::ApiClient(std::unique_ptr<ApiTransport> transport) : transport_(std::move(transport)) {}
ApiClient::ApiClient(ApiClient&&) noexcept = default;
ApiClient& ApiClient::operator=(ApiClient&&) noexcept = default;
ApiClient::~ApiClient() = default;

const std::string& ApiClient::base_url() const { return transport_->base_url(); }

// CatalogApi

Result<Answer<std::vector<api::GpuType>>> CatalogApi::gpu_types() {
  return typed<std::vector<api::GpuType>>(transport().list_items("/v1/gpu-types"));
}

Result<Answer<std::vector<api::Offer>>> CatalogApi::offers(std::string_view sort) {
  std::string query;
  add_query(query, "sort", sort);
  return typed<std::vector<api::Offer>>(transport().list_items("/v1/offers", query));
}

// AccessApi

Result<Answer<api::Whoami>> AccessApi::whoami() {
  return typed<api::Whoami>(transport().call("GET", "/v1/whoami"));
}

Result<Answer<api::Tenant>> AccessApi::create_tenant(std::string_view name) {
  const Json body = api::TenantCreate{.name = std::string(name)};
  return typed<api::Tenant>(transport().call("POST", "/v1/tenants", &body));
}

Result<Answer<std::vector<api::TenantWithBalance>>> AccessApi::list_tenants() {
  return typed<std::vector<api::TenantWithBalance>>(transport().list_items("/v1/tenants"));
}

Result<Answer<api::Quota>> AccessApi::set_quota(std::string_view tenant_id,
                                                const api::QuotaSet& quota) {
  const Json body = quota;
  return typed<api::Quota>(
      transport().call("PUT", fmt::format("/v1/tenants/{}/quota", encode(tenant_id)), &body));
}

Result<Answer<api::Quota>> AccessApi::get_quota(std::string_view tenant_id) {
  return typed<api::Quota>(
      transport().call("GET", fmt::format("/v1/tenants/{}/quota", encode(tenant_id))));
}

Result<Answer<api::ApiKeyCreated>> AccessApi::create_api_key(const ApiKeyRequest& request) {
  const auto unless_empty = [](const std::string& text) {
    return text.empty() ? std::nullopt : std::optional(text);
  };
  api::ApiKeyCreate create{.tenant_id = unless_empty(request.tenant_id),
                           .name = unless_empty(request.name),
                           .expires_at = request.expires_at};
  if (!request.scopes.empty()) create.scopes = request.scopes;
  if (!request.role.empty() && !model::parse_role(request.role, &create.role.emplace())) {
    return fail(
        invalid_field("role", "must be admin, operator, tenant-admin, tenant-member or read-only"));
  }
  const Json body = create;
  return typed<api::ApiKeyCreated>(transport().call("POST", "/v1/api-keys", &body));
}

Result<Answer<std::vector<api::ApiKey>>> AccessApi::list_api_keys(std::string_view tenant_id) {
  return typed<std::vector<api::ApiKey>>(
      transport().list_items("/v1/api-keys", tenant_query(tenant_id)));
}

Status AccessApi::revoke_api_key(std::string_view id) {
  return no_content(transport().call("DELETE", "/v1/api-keys/" + encode(id)));
}

Result<Answer<api::JoinToken>> AccessApi::create_join_token(const api::JoinTokenCreate& request) {
  const Json body = request;
  return typed<api::JoinToken>(transport().call("POST", "/v1/join-tokens", &body));
}

// InstancesApi

Result<Answer<api::Instance>> InstancesApi::create(const model::InstanceSpec& spec,
                                                   std::string_view idempotency_key,
                                                   model::RuntimeChoice runtime) {
  const Json body = api::InstanceCreate{workload_request(spec, runtime)};
  return typed<api::Instance>(transport().call("POST", "/v1/instances", &body, idempotency_key));
}

Result<Answer<std::vector<api::Instance>>> InstancesApi::list(const InstanceFilter& filter) {
  std::string query;
  add_query(query, "tenant", filter.tenant_id);
  add_query(query, "state", filter.state);
  return typed<std::vector<api::Instance>>(transport().list_items("/v1/instances", query));
}

Result<Answer<api::Instance>> InstancesApi::get(std::string_view id) {
  return typed<api::Instance>(transport().call("GET", "/v1/instances/" + encode(id)));
}

Result<Answer<api::Instance>> InstancesApi::stop(std::string_view id) {
  return typed<api::Instance>(
      transport().call("POST", fmt::format("/v1/instances/{}/stop", encode(id))));
}

Result<Answer<api::Instance>> InstancesApi::start(std::string_view id, bool anywhere) {
  const Json body = {{"anywhere", true}};
  return typed<api::Instance>(transport().call(
      "POST", fmt::format("/v1/instances/{}/start", encode(id)), anywhere ? &body : nullptr));
}

Result<Answer<api::Instance>> InstancesApi::remove(std::string_view id) {
  return typed<api::Instance>(transport().call("DELETE", "/v1/instances/" + encode(id)));
}

Status InstancesApi::stream_logs(std::string_view id, bool follow,
                                 const std::function<bool(std::string_view)>& on_chunk) {
  return transport().stream_text(
      fmt::format("/v1/instances/{}/logs{}", encode(id), follow ? "?follow=true" : ""), follow,
      on_chunk);
}

Result<Answer<api::ServiceTicket>> InstancesApi::service_ticket(std::string_view id,
                                                                std::string_view service) {
  return typed<api::ServiceTicket>(transport().call(
      "POST", fmt::format("/v1/instances/{}/services/{}/ticket", encode(id), encode(service))));
}

Result<Answer<api::AlertRule>> InstancesApi::set_idle_alert(std::string_view id,
                                                            const api::IdleAlertSet& idle) {
  const Json body = idle;
  return typed<api::AlertRule>(
      transport().call("PUT", fmt::format("/v1/instances/{}/idle-alert", encode(id)), &body));
}

Result<model::ExecFrame> InstancesApi::exec(
    std::string_view id, const model::ExecRequest& exec,
    const std::function<void(const model::ExecFrame&)>& on_output) {
  HttpRequest request{.method = "POST", .target = fmt::format("/v1/instances/{}/exec", encode(id))};
  request.body = Json(exec).dump(-1, ' ', false, Json::error_handler_t::replace);
  const std::string what = fmt::format("POST {}{}", transport().base_url(), request.target);
  model::ExecFrameReader reader;
  std::optional<model::ExecFrame> exit;
  std::optional<Error> broken;
  // Output may pause for as long as the command runs quietly; the timeout ends it on the node.
  const auto idle = std::chrono::seconds(exec.timeout_s) + kCallTimeout;
  GPURENT_TRY(answer, transport().stream(
                          std::move(request),
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
  if (answer.status >= 300) return fail(error_from_response(answer, what));
  if (broken) return fail(bad_response(what, broken->message));
  if (!exit) {
    return fail(
        Error{ErrorKind::kUnavailable, "exec_interrupted",
              fmt::format("the output of {} ended before the command's exit status", what)});
  }
  return std::move(*exit);
}

Status InstancesApi::ssh_tunnel(std::string_view id, int in_fd, int out_fd) {
  HttpRequest request{.method = "GET",
                      .target = fmt::format("/v1/instances/{}/ssh", encode(id)),
                      .headers = {{"Upgrade", "ssh"}}};
  const std::string what = fmt::format("GET {}{}", transport().base_url(), request.target);
  GPURENT_TRY(answer, transport().tunnel(std::move(request), in_fd, out_fd));
  if (answer.status != 101) return fail(error_from_response(answer, what));
  return {};
}

// JobsApi

Result<Answer<api::Job>> JobsApi::create(const model::JobSpec& spec,
                                         std::string_view idempotency_key,
                                         model::RuntimeChoice runtime) {
  api::JobCreate request{.workload = workload_request(spec.task, runtime)};
  if (spec.nodes != 1) request.nodes = spec.nodes;
  if (spec.array != 1) request.array = spec.array;
  if (spec.retries != 0) request.retries = spec.retries;
  const Json body = request;
  return typed<api::Job>(transport().call("POST", "/v1/jobs", &body, idempotency_key));
}

Result<Answer<std::vector<api::Job>>> JobsApi::list(std::string_view tenant_id) {
  return typed<std::vector<api::Job>>(transport().list_items("/v1/jobs", tenant_query(tenant_id)));
}

Result<Answer<api::Job>> JobsApi::get(std::string_view id, bool all_tasks) {
  return typed<api::Job>(transport().call(
      "GET", fmt::format("/v1/jobs/{}{}", encode(id), all_tasks ? "?tasks=1" : "")));
}

Result<Answer<api::Job>> JobsApi::cancel(std::string_view id) {
  return typed<api::Job>(transport().call("POST", fmt::format("/v1/jobs/{}/cancel", encode(id))));
}

Status JobsApi::stream_logs(std::string_view id, JobMember member, bool follow,
                            const std::function<bool(std::string_view)>& on_chunk) {
  return transport().stream_text(
      fmt::format("/v1/jobs/{}/logs?task={}&rank={}{}", encode(id), member.task, member.rank,
                  follow ? "&follow=true" : ""),
      follow, on_chunk);
}

// VolumesApi

Result<Answer<api::Volume>> VolumesApi::create(const VolumeRequest& request,
                                               std::string_view idempotency_key) {
  const Json body = api::VolumeCreate{
      .name = request.name,
      .size_gb = request.size_gb,
      .node_id = request.node_id.empty() ? std::nullopt : std::optional(request.node_id)};
  return typed<api::Volume>(transport().call("POST", "/v1/volumes", &body, idempotency_key));
}

Result<Answer<std::vector<api::Volume>>> VolumesApi::list() {
  return typed<std::vector<api::Volume>>(transport().list_items("/v1/volumes"));
}

Result<Answer<api::Volume>> VolumesApi::get(std::string_view id) {
  return typed<api::Volume>(transport().call("GET", "/v1/volumes/" + encode(id)));
}

Status VolumesApi::remove(std::string_view id) {
  return no_content(transport().call("DELETE", "/v1/volumes/" + encode(id)));
}

// FilesApi

Result<Answer<api::Upload>> FilesApi::upload(std::string_view bytes) {
  const Json declared =
      api::UploadCreate{.size = static_cast<int64_t>(bytes.size()), .sha256 = sha256_hex(bytes)};
  GPURENT_TRY(upload, transport().call("POST", "/v1/uploads", &declared));
  const std::string target = "/v1/uploads/" + string_field(upload, "id");
  // The server may answer with an upload of the same bytes begun earlier: go on from its end.
  int64_t received = upload.value("received", int64_t{0});
  int failures = 0;
  while (!upload.value("complete", false)) {
    const auto piece = bytes.substr(static_cast<size_t>(received), kUploadPieceBytes);
    auto response = transport().send({.method = "PUT",
                                      .target = fmt::format("{}?offset={}", target, received),
                                      .body = std::string(piece),
                                      .content_type = "application/octet-stream"},
                                     kCallTimeout);
    if (!response || response->status == 409) {
      // A lost connection, or a piece the server already has: ask where it stands, go on there.
      if (++failures > kMaxUploadRetries) {
        return response ? fail(error_from_response(*response, "PUT " + target))
                        : fail(std::move(response).error());
      }
      GPURENT_TRY(status, transport().call("GET", target));
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
  return typed<api::Upload>(std::move(upload));
}

Result<Answer<model::CopyResult>> FilesApi::copy_into_instance(std::string_view id,
                                                               std::string_view upload_id,
                                                               std::string_view path) {
  return copy_into(transport(), "instances", id, upload_id, path);
}

Result<Answer<model::CopyResult>> FilesApi::copy_into_volume(std::string_view id,
                                                             std::string_view upload_id,
                                                             std::string_view path) {
  return copy_into(transport(), "volumes", id, upload_id, path);
}

// TemplatesApi

Result<Answer<std::vector<api::Template>>> TemplatesApi::list() {
  return typed<std::vector<api::Template>>(transport().list_items("/v1/templates"));
}

Result<Answer<api::Template>> TemplatesApi::get(std::string_view name) {
  return typed<api::Template>(transport().call("GET", "/v1/templates/" + encode(name)));
}

Result<Answer<api::Template>> TemplatesApi::put(std::string_view name, const api::TemplateSet& t) {
  const Json body = t;
  return typed<api::Template>(transport().call("PUT", "/v1/templates/" + encode(name), &body));
}

Status TemplatesApi::remove(std::string_view name) {
  return no_content(transport().call("DELETE", "/v1/templates/" + encode(name)));
}

// ReservationsApi

Result<Answer<api::Reservation>> ReservationsApi::create(const api::ReservationCreate& request) {
  const Json body = request;
  return typed<api::Reservation>(transport().call("POST", "/v1/reservations", &body));
}

Result<Answer<api::Reservation>> ReservationsApi::quote(const api::ReservationCreate& request) {
  const Json body = request;
  return typed<api::Reservation>(transport().call("POST", "/v1/reservations/quote", &body));
}

Result<Answer<std::vector<api::Reservation>>> ReservationsApi::list() {
  return typed<std::vector<api::Reservation>>(transport().list_items("/v1/reservations"));
}

Result<Answer<api::Reservation>> ReservationsApi::cancel(std::string_view id) {
  return typed<api::Reservation>(transport().call("DELETE", "/v1/reservations/" + encode(id)));
}

// NodesApi

Result<Answer<std::vector<api::Node>>> NodesApi::list() {
  return typed<std::vector<api::Node>>(transport().list_items("/v1/nodes"));
}

Result<Answer<api::Node>> NodesApi::get(std::string_view id) {
  return typed<api::Node>(transport().call("GET", "/v1/nodes/" + encode(id)));
}

Result<Answer<api::Node>> NodesApi::action(std::string_view id, std::string_view action) {
  return typed<api::Node>(
      transport().call("POST", fmt::format("/v1/nodes/{}/{}", encode(id), action)));
}

Result<Answer<api::Node>> NodesApi::release_gpu(std::string_view node_id, int gpu_index) {
  return typed<api::Node>(transport().call(
      "POST", fmt::format("/v1/nodes/{}/gpus/{}/release", encode(node_id), gpu_index)));
}

Result<Answer<api::BenchmarkRequest>> NodesApi::benchmark(std::string_view node_id) {
  return typed<api::BenchmarkRequest>(
      transport().call("POST", fmt::format("/v1/nodes/{}/benchmark", encode(node_id))));
}

Result<Answer<std::vector<api::GpuBenchmarkHistory>>> NodesApi::benchmarks(
    std::string_view node_id) {
  return typed<std::vector<api::GpuBenchmarkHistory>>(
      transport().list_items(fmt::format("/v1/nodes/{}/benchmarks", encode(node_id))));
}

Result<Answer<api::TrainingRecord>> NodesApi::record_training(std::string_view instance_id) {
  const Json body = api::TrainingRecordCreate{.instance_id = std::string(instance_id)};
  return typed<api::TrainingRecord>(transport().call("POST", "/v1/training-benchmarks", &body));
}

// BillingApi

Result<Answer<api::Balance>> BillingApi::balance(std::string_view tenant_id) {
  return typed<api::Balance>(
      transport().call("GET", "/v1/billing/balance" + with_query(tenant_query(tenant_id))));
}

Result<Answer<api::Usage>> BillingApi::usage() {
  return typed<api::Usage>(transport().fetch_all_pages("/v1/billing/usage"));
}

Result<Answer<std::vector<api::Transfer>>> BillingApi::transfers() {
  return typed<std::vector<api::Transfer>>(transport().list_items("/v1/billing/transfers"));
}

Result<Answer<api::TopupResult>> BillingApi::topup(const api::Topup& topup,
                                                   std::string_view idempotency_key) {
  const Json body = topup;
  return typed<api::TopupResult>(
      transport().call("POST", "/v1/billing/topups", &body, idempotency_key));
}

Result<Answer<api::BalanceSettings>> BillingApi::balance_settings(std::string_view tenant_id) {
  return typed<api::BalanceSettings>(
      transport().call("GET", "/v1/billing/settings" + with_query(tenant_query(tenant_id))));
}

Result<Answer<api::BalanceSettings>> BillingApi::set_balance_settings(
    const api::BalanceSettingsSet& settings) {
  const Json body = settings;
  return typed<api::BalanceSettings>(transport().call("PUT", "/v1/billing/settings", &body));
}

Result<Answer<std::vector<api::InvoiceSummary>>> BillingApi::list_invoices(
    std::string_view tenant_id) {
  return typed<std::vector<api::InvoiceSummary>>(
      transport().list_items("/v1/billing/invoices", tenant_query(tenant_id)));
}

Result<Answer<api::Invoice>> BillingApi::get_invoice(std::string_view id,
                                                     std::string_view tenant_id) {
  return typed<api::Invoice>(transport().call(
      "GET", "/v1/billing/invoices/" + encode(id) + with_query(tenant_query(tenant_id))));
}

Result<std::string> BillingApi::get_invoice_csv(std::string_view id, std::string_view tenant_id) {
  std::string query = tenant_query(tenant_id);
  add_query(query, "format", "csv");
  std::string csv;
  GPURENT_CHECK(transport().stream_text("/v1/billing/invoices/" + encode(id) + "?" + query, false,
                                        [&](std::string_view chunk) {
                                          csv += chunk;
                                          return true;
                                        }));
  return csv;
}

Result<Answer<api::RevenueReport>> BillingApi::revenue(std::string_view from, std::string_view to) {
  std::string query;
  add_query(query, "from", from);
  add_query(query, "to", to);
  return typed<api::RevenueReport>(
      transport().call("GET", "/v1/billing/revenue" + with_query(query)));
}

Result<Answer<std::vector<api::PackageProduct>>> BillingApi::package_products() {
  return typed<std::vector<api::PackageProduct>>(transport().list_items("/v1/packages/products"));
}

Result<Answer<api::PackageProduct>> BillingApi::set_package_product(
    const api::PackageProduct& product) {
  const Json body = product;
  return typed<api::PackageProduct>(transport().call("PUT", "/v1/packages/products", &body));
}

Result<Answer<api::Package>> BillingApi::buy_package(std::string_view product,
                                                     std::string_view idempotency_key) {
  const Json body = api::PackagePurchase{.product = std::string(product)};
  return typed<api::Package>(transport().call("POST", "/v1/packages", &body, idempotency_key));
}

Result<Answer<std::vector<api::Package>>> BillingApi::list_packages(std::string_view tenant_id) {
  return typed<std::vector<api::Package>>(
      transport().list_items("/v1/packages", tenant_query(tenant_id)));
}

Result<Answer<api::Prices>> BillingApi::prices() {
  return typed<api::Prices>(transport().call("GET", "/v1/prices"));
}

Result<Answer<api::PriceVersion>> BillingApi::set_prices(const api::PriceChange& change) {
  const Json body = change;
  return typed<api::PriceVersion>(transport().call("PUT", "/v1/prices", &body));
}

Result<Answer<std::vector<api::PriceVersion>>> BillingApi::price_history() {
  return typed<std::vector<api::PriceVersion>>(transport().list_items("/v1/prices/history"));
}

Result<Answer<api::SpotPrices>> BillingApi::spot_prices(std::string_view gpu_type,
                                                        std::string_view from,
                                                        std::string_view to) {
  std::string query;
  add_query(query, "gpu_type", gpu_type);
  add_query(query, "from", from);
  add_query(query, "to", to);
  return typed<api::SpotPrices>(transport().call("GET", "/v1/spot-prices" + with_query(query)));
}

Result<Answer<api::Estimate>> BillingApi::estimate(const model::InstanceSpec& spec,
                                                   model::RuntimeChoice runtime,
                                                   std::optional<api::EstimateWork> work) {
  const Json body = api::EstimateCreate{workload_request(spec, runtime), std::move(work)};
  return typed<api::Estimate>(transport().call("POST", "/v1/estimate", &body));
}

// MonitoringApi

Result<Answer<api::MetricSeries>> MonitoringApi::query_metrics(
    const std::vector<std::pair<std::string, std::string>>& query) {
  std::string text;
  for (const auto& [key, value] : query) add_query(text, key, value);
  return typed<api::MetricSeries>(transport().call("GET", "/v1/metrics/query?" + text));
}

Result<Answer<api::AlertList>> MonitoringApi::list_alerts() {
  return typed<api::AlertList>(transport().call("GET", "/v1/alerts"));
}

Result<Answer<api::AlertAcknowledged>> MonitoringApi::acknowledge_alert(std::string_view id) {
  return typed<api::AlertAcknowledged>(
      transport().call("POST", "/v1/alerts/" + encode(id) + "/ack"));
}

Result<Answer<std::vector<api::AlertRule>>> MonitoringApi::list_alert_rules() {
  return typed<std::vector<api::AlertRule>>(transport().list_items("/v1/alerts/rules"));
}

Result<Answer<api::AlertRule>> MonitoringApi::put_alert_rule(const api::AlertRuleCreate& rule) {
  const Json body = rule;
  return typed<api::AlertRule>(transport().call("POST", "/v1/alerts/rules", &body));
}

Status MonitoringApi::delete_alert_rule(std::string_view name) {
  return no_content(transport().call("DELETE", "/v1/alerts/rules/" + encode(name)));
}

Result<Answer<std::vector<api::AuditEntry>>> AccessApi::list_audit(std::string_view tenant,
                                                                   std::string_view key_id) {
  std::string query;
  add_query(query, "tenant", tenant);
  add_query(query, "key", key_id);
  return typed<std::vector<api::AuditEntry>>(transport().list_items("/v1/audit", query));
}

Result<Answer<std::vector<api::Event>>> MonitoringApi::list_events(std::string_view object_id,
                                                                   std::string_view kind) {
  std::string query;
  add_query(query, "object", object_id);
  add_query(query, "kind", kind);
  return typed<std::vector<api::Event>>(transport().list_items("/v1/events", query));
}

}  // namespace gpurent::client
