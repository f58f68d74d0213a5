// The C++ SDK for the gpurent REST API (docs/api.md), used by the CLI: an ApiClient hands out one
// small class per group of routes (api.instances().create(...), api.billing().balance(), ...), one
// method per route.
//
// Requests are sent and answers read as the API's types (src/api/, the structs the server writes
// its views with and api/openapi_schema_test.cc holds to docs/openapi.json): an Answer holds the
// body read into its struct and the server's JSON as it came. Lists come back as their items
// (every page fetched and joined, at most kMaxListPages pages), everything else as the object the
// route answers; a route that answers 204 gives a Status. A
// non-2xx answer becomes an Error with the problem's `code` and `detail` and the kind of its status
// (an answer that is not problem+json gets code "http_<status>"); a server that cannot be reached
// becomes an Error of kind kUnavailable whose message names the URL. Every call has a deadline of
// kCallTimeout; only the log streams (stream_logs), exec and the copies into an instance or volume
// may run longer. What every group shares (the connection, the API key, error mapping, paging,
// deadlines) lives once, in the ApiTransport (client/api_transport.h) they all hold.
//
// Not thread-safe (an ApiClient owns one HttpClient and its keep-alive connection, which every
// group it hands out uses): one per thread. A group is a view: valid while its ApiClient lives
// (moving the ApiClient keeps it valid), cheap to get again for each call.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/accounts.h"
#include "api/billing.h"
#include "api/fleet.h"
#include "api/monitoring.h"
#include "api/templates.h"
#include "api/workloads.h"
#include "client/http_client.h"
#include "common/json.h"
#include "common/money.h"
#include "model/exec_protocol.h"
#include "model/file_copy.h"
#include "model/instance.h"
#include "model/job.h"
#include "model/template.h"

namespace gpurent::client {

inline constexpr std::chrono::seconds kCallTimeout{30};
inline constexpr std::chrono::seconds kCopyCallTimeout{960};
inline constexpr int kMaxListPages = 1000;  // x 500 items per page
// A followed log is quiet while its instance prints nothing; only a day of silence ends it.
inline constexpr std::chrono::hours kFollowIdleTimeout{24};

struct InstanceFilter {
  std::string tenant_id;  // operators only; "" = the caller's own (operators: all)
  std::string state;      // "" = every state
};

// A member of a job whose log to read: task index and rank within the task's gang.
struct JobMember {
  int task = 0;
  int rank = 0;
};

struct VolumeRequest {
  std::string name;
  int size_gb = 0;
  std::string node_id;  // operators only; "" = where it is first used
};

struct ApiKeyRequest {
  std::string tenant_id;  // "" = the caller's tenant
  std::string role;       // "" = the caller's own (tenant-admin when an operator asks)
  std::string name;
  std::vector<std::string> scopes;  // none: everything the role allows (model/scopes.h)
  std::optional<Timestamp> expires_at;
};

// A typed answer: the body read into its struct (leniently, api/json_form.h: a member that a server
// of another version leaves out or types otherwise keeps its default), and the JSON the server
// sent, whole (what `gpurent -o json` prints, members a newer server adds included).
template <class T>
struct Answer {
  using value_type = T;
  T value;
  Json json;
};

// Maps a non-2xx answer to an Error (exposed for tests). `request` names what was asked, for the
// message when the body is not a problem document: "GET http://host:8080/v1/whoami".
Error error_from_response(const HttpResponse& response, std::string_view request);

// Below the server's 1 MiB body limit.
inline constexpr size_t kUploadPieceBytes = 1'000'000;
inline constexpr int kMaxUploadRetries = 5;

class ApiTransport;  // client/api_transport.h

// What every group holds: the ApiClient's transport, by reference.
class ApiGroup {
 public:
  explicit ApiGroup(ApiTransport& transport) : transport_(transport) {}

 protected:
  ApiTransport& transport() const { return transport_; }

 private:
  ApiTransport& transport_;
};

// Platform-wide reads: the GPU types the platform knows and the offers (free capacity and price by
// GPU type) a launch can take.
class CatalogApi : ApiGroup {
 public:
  using ApiGroup::ApiGroup;

  Result<Answer<std::vector<api::GpuType>>> gpu_types();
  // sort: "" (by GPU type), "price", "perf_per_price" or "spot_perf_per_price".
  Result<Answer<std::vector<api::Offer>>> offers(std::string_view sort = {});
};

// Who may do what: the caller itself, tenants and their quotas, API keys, and the tokens a new node
// joins with. Creating tenants, keys for other tenants, quotas and join tokens is for operators.
class AccessApi : ApiGroup {
 public:
  using ApiGroup::ApiGroup;

  // The caller's key.
  Result<Answer<api::Whoami>> whoami();
  Result<Answer<api::Tenant>> create_tenant(std::string_view name);
  Result<Answer<std::vector<api::TenantWithBalance>>> list_tenants();
  // Replaces the tenant's whole quota (operators).
  Result<Answer<api::Quota>> set_quota(std::string_view tenant_id, const api::QuotaSet& quota);
  Result<Answer<api::Quota>> get_quota(std::string_view tenant_id);
  Result<Answer<api::ApiKeyCreated>> create_api_key(const ApiKeyRequest& request);
  // The keys of a tenant ("" = the caller's; tenant admins see their tenant's, members their
  // own), secrets never included.
  Result<Answer<std::vector<api::ApiKey>>> list_api_keys(std::string_view tenant_id = {});
  // The key stops working at once.
  Status revoke_api_key(std::string_view id);
  // The audit log (tenant admins: their tenant's; operators: all, or `tenant`'s), every page,
  // oldest first; `key_id` narrows it to one key's calls.
  Result<Answer<std::vector<api::AuditEntry>>> list_audit(std::string_view tenant,
                                                          std::string_view key_id);
  Result<Answer<api::JoinToken>> create_join_token(const api::JoinTokenCreate& request);
};

// Rented instances (/v1/instances): launch, read, stop, start, delete, and what runs inside one:
// its log, login tickets for its services, commands run in it.
class InstancesApi : ApiGroup {
 public:
  using ApiGroup::ApiGroup;

  // Sends the spec as the launch body (an empty command is left out; template_name is sent as
  // `template`, with `runtime` unless kAuto). idempotency_key, when not empty, makes a retry of
  // the same launch return the first instance.
  Result<Answer<api::Instance>> create(const model::InstanceSpec& spec,
                                       std::string_view idempotency_key = {},
                                       model::RuntimeChoice runtime = model::RuntimeChoice::kAuto);
  Result<Answer<std::vector<api::Instance>>> list(const InstanceFilter& filter = {});
  Result<Answer<api::Instance>> get(std::string_view id);
  Result<Answer<api::Instance>> stop(std::string_view id);
  // Starts it again on the node that keeps its files; with `anywhere`, on any node (its files
  // there are deleted).
  Result<Answer<api::Instance>> start(std::string_view id, bool anywhere = false);
  // DELETE /v1/instances/{id}: terminates it for good.
  Result<Answer<api::Instance>> remove(std::string_view id);
  // Hands the instance's log to on_chunk as it arrives; with follow, until the instance ends or
  // on_chunk returns false (a followed log may be quiet for up to kFollowIdleTimeout).
  Status stream_logs(std::string_view id, bool follow,
                     const std::function<bool(std::string_view)>& on_chunk);
  // A login ticket for a service of the instance: {"path": "/i/<id>/<service>/?login=...",
  // "expires_at"}; the server's URL joined with the path opens it in a browser.
  Result<Answer<api::ServiceTicket>> service_ticket(std::string_view id, std::string_view service);
  // Alerts on (and, with auto_stop, stops) the instance while its GPUs idle; returns the rule.
  Result<Answer<api::AlertRule>> set_idle_alert(std::string_view id, const api::IdleAlertSet& idle);
  // Runs a command in the instance (POST /v1/instances/{id}/exec) and hands each output frame to
  // on_output as it arrives; returns the exit frame. Error "exec_interrupted" (kUnavailable) when
  // the stream ends without one. Output may pause for the command's timeout_s plus kCallTimeout.
  Result<model::ExecFrame> exec(std::string_view id, const model::ExecRequest& request,
                                const std::function<void(const model::ExecFrame&)>& on_output);
  // A byte tunnel to the SSH server of a VM instance (GET /v1/instances/{id}/ssh, an upgrade):
  // relays in_fd to it and its bytes to out_fd until it closes (an OpenSSH ProxyCommand).
  Status ssh_tunnel(std::string_view id, int in_fd, int out_fd);
};

// Batch jobs (/v1/jobs): submit, read, cancel, and the log of one member.
class JobsApi : ApiGroup {
 public:
  using ApiGroup::ApiGroup;

  // Sends the job as its creation body: what each member runs (as InstancesApi::create sends it,
  // less `queue`), and nodes, array and retries where they differ from 1, 1 and 0.
  Result<Answer<api::Job>> create(const model::JobSpec& spec, std::string_view idempotency_key = {},
                                  model::RuntimeChoice runtime = model::RuntimeChoice::kAuto);
  // tenant_id: operators only; "" = the caller's own (operators: all).
  Result<Answer<std::vector<api::Job>>> list(std::string_view tenant_id = {});
  // all_tasks: list every task even of an array above the server's limit for views.
  Result<Answer<api::Job>> get(std::string_view id, bool all_tasks = false);
  Result<Answer<api::Job>> cancel(std::string_view id);
  // As InstancesApi::stream_logs, for one member of a job.
  Status stream_logs(std::string_view id, JobMember member, bool follow,
                     const std::function<bool(std::string_view)>& on_chunk);
};

// Persistent volumes (/v1/volumes).
class VolumesApi : ApiGroup {
 public:
  using ApiGroup::ApiGroup;

  Result<Answer<api::Volume>> create(const VolumeRequest& request,
                                     std::string_view idempotency_key = {});
  Result<Answer<std::vector<api::Volume>>> list();
  Result<Answer<api::Volume>> get(std::string_view id);
  // DELETE /v1/volumes/{id} (204).
  Status remove(std::string_view id);
};

// Files into the platform (`gpurent cp`, --workdir): uploads, and unpacking one into an instance
// or a volume.
class FilesApi : ApiGroup {
 public:
  using ApiGroup::ApiGroup;

  // Uploads bytes (POST /v1/uploads, then PUT pieces of kUploadPieceBytes), resuming from the
  // server's count after a lost piece (at most kMaxUploadRetries times); returns the complete
  // upload.
  Result<Answer<api::Upload>> upload(std::string_view bytes);
  // Unpacks a complete upload (a tar.gz) into a directory of a running instance or of a volume
  // (POST /v1/{instances|volumes}/{id}/files, model/file_copy.h): what was written. Waits up to
  // kCopyCallTimeout for the node to unpack it.
  Result<Answer<model::CopyResult>> copy_into_instance(std::string_view id,
                                                       std::string_view upload_id,
                                                       std::string_view path);
  Result<Answer<model::CopyResult>> copy_into_volume(std::string_view id,
                                                     std::string_view upload_id,
                                                     std::string_view path);
};

// Launch templates (/v1/templates); writing them is for operators.
class TemplatesApi : ApiGroup {
 public:
  using ApiGroup::ApiGroup;

  Result<Answer<std::vector<api::Template>>> list();
  Result<Answer<api::Template>> get(std::string_view name);
  // Creates or replaces the template of that name (operators).
  Result<Answer<api::Template>> put(std::string_view name, const api::TemplateSet& t);
  Status remove(std::string_view name);
};

// Reserved capacity (/v1/reservations).
class ReservationsApi : ApiGroup {
 public:
  using ApiGroup::ApiGroup;

  Result<Answer<api::Reservation>> create(const api::ReservationCreate& request);
  // What create would book and charge, booking nothing.
  Result<Answer<api::Reservation>> quote(const api::ReservationCreate& request);
  Result<Answer<std::vector<api::Reservation>>> list();
  Result<Answer<api::Reservation>> cancel(std::string_view id);
};

// GPU nodes (/v1/nodes), for operators: the inventory and what an operator does to a node.
class NodesApi : ApiGroup {
 public:
  using ApiGroup::ApiGroup;

  Result<Answer<std::vector<api::Node>>> list();
  Result<Answer<api::Node>> get(std::string_view id);
  // action: "cordon", "uncordon" or "drain".
  Result<Answer<api::Node>> action(std::string_view id, std::string_view action);
  // Puts a quarantined GPU of the node back in service; returns the node.
  Result<Answer<api::Node>> release_gpu(std::string_view node_id, int gpu_index);
  // Asks the node to measure its GPUs that hold no work (docs/node-benchmark.md).
  Result<Answer<api::BenchmarkRequest>> benchmark(std::string_view node_id);
  // The benchmark history of each of the node's GPUs measured.
  Result<Answer<std::vector<api::GpuBenchmarkHistory>>> benchmarks(std::string_view node_id);
  // Records a finished resnet50-bench instance's figures against its GPU (POST
  // /v1/training-benchmarks).
  Result<Answer<api::TrainingRecord>> record_training(std::string_view instance_id);
};

// Money: the balance and its settings, usage, transfers, top-ups, invoices, revenue, packages, and
// the price book (prices, their history, the spot market, a launch's estimate). tenant_id "" = the
// caller's own tenant throughout.
class BillingApi : ApiGroup {
 public:
  using ApiGroup::ApiGroup;

  Result<Answer<api::Balance>> balance(std::string_view tenant_id = {});
  // The whole usage object: items plus total_micros and currency.
  Result<Answer<api::Usage>> usage();
  Result<Answer<std::vector<api::Transfer>>> transfers();
  Result<Answer<api::TopupResult>> topup(const api::Topup& topup,
                                         std::string_view idempotency_key = {});
  Result<Answer<api::BalanceSettings>> balance_settings(std::string_view tenant_id = {});
  Result<Answer<api::BalanceSettings>> set_balance_settings(
      const api::BalanceSettingsSet& settings);
  Result<Answer<std::vector<api::InvoiceSummary>>> list_invoices(std::string_view tenant_id = {});
  Result<Answer<api::Invoice>> get_invoice(std::string_view id, std::string_view tenant_id = {});
  Result<std::string> get_invoice_csv(std::string_view id, std::string_view tenant_id = {});
  // Operators: revenue in [from, to) (RFC 3339; "" = unbounded).
  Result<Answer<api::RevenueReport>> revenue(std::string_view from, std::string_view to);

  // Packages: the products on sale (set_package_product: operators), buying one, those held.
  Result<Answer<std::vector<api::PackageProduct>>> package_products();
  Result<Answer<api::PackageProduct>> set_package_product(const api::PackageProduct& product);
  Result<Answer<api::Package>> buy_package(std::string_view product,
                                           std::string_view idempotency_key = {});
  Result<Answer<std::vector<api::Package>>> list_packages(std::string_view tenant_id = {});

  // The price book: GET /v1/prices (current and upcoming), PUT /v1/prices (operators), GET
  // /v1/prices/history, and the spot market's points (empty strings: not given).
  Result<Answer<api::Prices>> prices();
  Result<Answer<api::PriceVersion>> set_prices(const api::PriceChange& change);
  Result<Answer<std::vector<api::PriceVersion>>> price_history();
  Result<Answer<api::SpotPrices>> spot_prices(std::string_view gpu_type, std::string_view from,
                                              std::string_view to);
  // The hourly price of a launch: the body InstancesApi::create would send, to POST /v1/estimate;
  // with `work`, also how long that work takes on it and what it costs.
  Result<Answer<api::Estimate>> estimate(const model::InstanceSpec& spec,
                                         model::RuntimeChoice runtime = model::RuntimeChoice::kAuto,
                                         std::optional<api::EstimateWork> work = std::nullopt);
};

// Monitoring (docs/api.md, "Metrics and alerts") and the event log.
class MonitoringApi : ApiGroup {
 public:
  using ApiGroup::ApiGroup;

  // query: the parameters of GET /v1/metrics/query, passed through.
  Result<Answer<api::MetricSeries>> query_metrics(
      const std::vector<std::pair<std::string, std::string>>& query);
  Result<Answer<api::AlertList>> list_alerts();
  Result<Answer<api::AlertAcknowledged>> acknowledge_alert(std::string_view id);
  Result<Answer<std::vector<api::AlertRule>>> list_alert_rules();
  Result<Answer<api::AlertRule>> put_alert_rule(const api::AlertRuleCreate& rule);
  Status delete_alert_rule(std::string_view name);
  // The event log, oldest first, filtered by object and kind when they are not empty.
  Result<Answer<std::vector<api::Event>>> list_events(std::string_view object_id,
                                                      std::string_view kind);
};

// The client: one connection to one server with one API key, and the groups of routes over it.
class ApiClient {
 public:
  // An empty api_key sends no Authorization header (the server then answers 401).
  static Result<ApiClient> create(std::string_view base_url, std::string api_key);
  ApiClient(ApiClient&&) noexcept;
  ApiClient& operator=(ApiClient&&) noexcept;
  ~ApiClient();

  const std::string& base_url() const;

  CatalogApi catalog() { return CatalogApi(*transport_); }
  AccessApi access() { return AccessApi(*transport_); }
  InstancesApi instances() { return InstancesApi(*transport_); }
  JobsApi jobs() { return JobsApi(*transport_); }
  VolumesApi volumes() { return VolumesApi(*transport_); }
  FilesApi files() { return FilesApi(*transport_); }
  TemplatesApi templates() { return TemplatesApi(*transport_); }
  ReservationsApi reservations() { return ReservationsApi(*transport_); }
  NodesApi nodes() { return NodesApi(*transport_); }
  BillingApi billing() { return BillingApi(*transport_); }
  MonitoringApi monitoring() { return MonitoringApi(*transport_); }

 private:
  explicit ApiClient(std::unique_ptr<ApiTransport> transport);

  // Behind a pointer so that the groups' reference to it survives a move of the ApiClient.
  std::unique_ptr<ApiTransport> transport_;
};

}  // namespace gpurent::client
