// The C++ SDK for the gpurent REST API (docs/api.md): one method per route, used by the CLI.
//
// Results are typed where src/api/ has the body (instances, jobs, volumes, nodes, tenants and keys,
// balance and usage): an Answer holds the body read into its struct and the server's JSON as it
// came. The other routes give the JSON alone. Lists come back as their items (every page fetched
// and joined, at most kMaxListPages pages), everything else as the object the route answers. A
// non-2xx answer becomes an Error with the problem's `code` and `detail` and the kind of its status
// (an answer that is not problem+json gets code "http_<status>"); a server that cannot be reached
// becomes an Error of kind kUnavailable whose message names the URL. Every call has a deadline of
// kCallTimeout; only stream_logs may run longer.
//
// Not thread-safe (it owns one HttpClient and its keep-alive connection): one per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "api/accounts.h"
#include "api/fleet.h"
#include "api/workloads.h"
#include "client/http_client.h"
#include "common/json.h"
#include "common/money.h"
#include "model/exec_protocol.h"
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

struct ReservationRequest {
  std::string tenant_id;  // "" = the caller's tenant
  std::string gpu_type;
  int gpu_count = 0;
  Timestamp start{};
  Timestamp end{};
  std::optional<int> term_days;  // instead of end: a term of this many days from start
  std::string payment;           // "upfront" (the server's default) or "monthly"
};

struct VolumeRequest {
  std::string name;
  int size_gb = 0;
  std::string node_id;  // operators only; "" = where it is first used
};

struct ApiKeyRequest {
  std::string tenant_id;  // "" = the caller's tenant
  std::string role;       // "" = tenant
  std::string name;
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

class ApiClient {
 public:
  // An empty api_key sends no Authorization header (the server then answers 401).
  static Result<ApiClient> create(std::string_view base_url, std::string api_key);

  const std::string& base_url() const { return http_.base_url(); }

  Result<Json> whoami();
  Result<Json> gpu_types();
  Result<Json> offers();

  // Sends the spec as the launch body (an empty command is left out; template_name is sent as
  // `template`, with `runtime` unless kAuto). idempotency_key, when not empty, makes a retry of
  // the same launch return the first instance.
  Result<Answer<api::Instance>> create_instance(
      const model::InstanceSpec& spec, std::string_view idempotency_key = {},
      model::RuntimeChoice runtime = model::RuntimeChoice::kAuto);
  Result<Answer<std::vector<api::Instance>>> list_instances(const InstanceFilter& filter = {});
  Result<Answer<api::Instance>> get_instance(std::string_view id);
  Result<Answer<api::Instance>> stop_instance(std::string_view id);
  Result<Answer<api::Instance>> start_instance(std::string_view id);
  Result<Answer<api::Instance>> delete_instance(std::string_view id);
  // Hands the instance's log to on_chunk as it arrives; with follow, until the instance ends or
  // on_chunk returns false.
  Status stream_logs(std::string_view id, bool follow,
                     const std::function<bool(std::string_view)>& on_chunk);

  // Sends the job as its creation body: what each member runs (as create_instance sends it, less
  // `queue`), and nodes, array and retries where they differ from 1, 1 and 0.
  // A login ticket for a service of the instance: {"path": "/i/<id>/<service>/?login=...",
  // "expires_at"}; the server's URL joined with the path opens it in a browser.
  Result<Json> service_ticket(std::string_view id, std::string_view service);
  // Runs a command in the instance (POST /v1/instances/{id}/exec) and hands each output frame to
  // on_output as it arrives; returns the exit frame. Error "exec_interrupted" (kUnavailable) when
  // the stream ends without one.
  Result<model::ExecFrame> exec(std::string_view id, const model::ExecRequest& request,
                                const std::function<void(const model::ExecFrame&)>& on_output);

  // Uploads bytes (POST /v1/uploads, then PUT pieces of kUploadPieceBytes), resuming from the
  // server's count after a lost piece; returns the complete upload ({"id", ...}).
  Result<Json> upload(std::string_view bytes);
  // Unpacks a complete upload (a tar.gz) into a directory of a running instance or of a volume
  // (`gpurent cp`; POST /v1/{instances|volumes}/{id}/files, model/file_copy.h): what was written.
  // Waits up to kCopyCallTimeout for the node to unpack it.
  Result<Json> copy_into_instance(std::string_view id, std::string_view upload_id,
                                  std::string_view path);
  Result<Json> copy_into_volume(std::string_view id, std::string_view upload_id,
                                std::string_view path);
  Result<Answer<api::Job>> create_job(const model::JobSpec& spec,
                                      std::string_view idempotency_key = {},
                                      model::RuntimeChoice runtime = model::RuntimeChoice::kAuto);

  Result<Json> list_templates();
  Result<Json> get_template(std::string_view name);
  // The template object as the API takes it (operators).
  Result<Json> put_template(std::string_view name, const Json& t);
  Status delete_template(std::string_view name);
  // tenant_id: operators only; "" = the caller's own (operators: all).
  Result<Answer<std::vector<api::Job>>> list_jobs(std::string_view tenant_id = {});
  // all_tasks: list every task even of an array above the server's limit for views.
  Result<Answer<api::Job>> get_job(std::string_view id, bool all_tasks = false);
  Result<Answer<api::Job>> cancel_job(std::string_view id);
  // As stream_logs, for one member of a job.
  Status stream_job_logs(std::string_view id, JobMember member, bool follow,
                         const std::function<bool(std::string_view)>& on_chunk);

  Result<Json> create_reservation(const ReservationRequest& request);
  // What create_reservation would book and charge, booking nothing.
  Result<Json> quote_reservation(const ReservationRequest& request);
  Result<Json> list_reservations();
  Result<Json> cancel_reservation(std::string_view id);

  Result<Answer<api::Volume>> create_volume(const VolumeRequest& request,
                                            std::string_view idempotency_key = {});
  Result<Answer<std::vector<api::Volume>>> list_volumes();
  // The event log, oldest first, filtered by object and kind when they are not empty.
  Result<Json> list_events(std::string_view object_id, std::string_view kind);
  // Monitoring (docs/api.md, "Metrics and alerts"). query: the parameters of
  // GET /v1/metrics/query, passed through.
  Result<Json> query_metrics(const std::vector<std::pair<std::string, std::string>>& query);
  Result<Json> list_alerts();
  Result<Json> list_alert_rules();
  Result<Json> put_alert_rule(const Json& rule);
  Status delete_alert_rule(std::string_view name);
  Result<Json> acknowledge_alert(std::string_view id);
  Result<Answer<api::Volume>> get_volume(std::string_view id);
  // The server answers 204: an empty object on success.
  Result<Json> delete_volume(std::string_view id);

  // The quota object as the API takes it: max_gpus_per_type, max_instances, weight (operators).
  Result<Json> set_quota(std::string_view tenant_id, const Json& quota);
  Result<Json> get_quota(std::string_view tenant_id);

  // tenant_id "" = the caller's own tenant.
  Result<Answer<api::Balance>> balance(std::string_view tenant_id = {});
  // The whole usage object: items plus total_micros and currency.
  Result<Answer<api::Usage>> usage();
  Result<Json> transfers();
  Result<Json> topup(std::string_view tenant_id, Micros amount, std::string_view reference = {},
                     std::string_view idempotency_key = {});

  // The price book: GET /v1/prices (current and upcoming), PUT /v1/prices (operators: a change
  // as the API takes it), GET /v1/prices/history, and the spot market's points (empty strings:
  // not given).
  Result<Json> prices();
  Result<Json> set_prices(const Json& change);
  Result<Json> price_history();
  Result<Json> spot_prices(std::string_view gpu_type, std::string_view from, std::string_view to);
  // The hourly price of a launch: the body create_instance would send, to POST /v1/estimate.
  Result<Json> estimate(const model::InstanceSpec& spec,
                        model::RuntimeChoice runtime = model::RuntimeChoice::kAuto);
  // Accounts: packages, balance settings, invoices. tenant_id "" = the caller's own.
  Result<Json> package_products();
  Result<Json> set_package_product(const Json& product);
  Result<Json> buy_package(std::string_view product, std::string_view idempotency_key = {});
  Result<Json> list_packages(std::string_view tenant_id = {});
  Result<Json> balance_settings(std::string_view tenant_id = {});
  Result<Json> set_balance_settings(const Json& settings);
  Result<Json> list_invoices(std::string_view tenant_id = {});
  Result<Json> get_invoice(std::string_view id, std::string_view tenant_id = {});
  Result<std::string> get_invoice_csv(std::string_view id, std::string_view tenant_id = {});
  // Operators: revenue in [from, to) (RFC 3339; "" = unbounded).
  Result<Json> revenue(std::string_view from, std::string_view to);

  Result<Answer<api::Tenant>> create_tenant(std::string_view name);
  Result<Answer<std::vector<api::TenantWithBalance>>> list_tenants();
  Result<Answer<api::ApiKeyCreated>> create_api_key(const ApiKeyRequest& request);

  Result<Answer<std::vector<api::Node>>> list_nodes();
  Result<Answer<api::Node>> get_node(std::string_view id);
  // action: "cordon", "uncordon" or "drain".
  Result<Answer<api::Node>> node_action(std::string_view id, std::string_view action);
  // Puts a quarantined GPU of the node back in service; returns the node.
  Result<Answer<api::Node>> release_gpu(std::string_view node_id, int gpu_index);
  // ttl_s nullopt = the server's default (24 h).
  Result<Json> create_join_token(std::string_view description, std::optional<int64_t> ttl_s);

 private:
  ApiClient(HttpClient http, std::string api_key)
      : http_(std::move(http)), api_key_(std::move(api_key)) {}

  // The JSON of an answer, read into T (a struct of src/api/, or a vector of them).
  template <class T>
  static Result<Answer<T>> typed(Result<Json> json) {
    if (!json) return fail(std::move(json).error());
    T value = json->template get<T>();
    return Answer<T>{std::move(value), std::move(*json)};
  }

  Result<Json> call(std::string_view method, std::string target, const Json* body = nullptr,
                    std::string_view idempotency_key = {},
                    std::chrono::seconds timeout = kCallTimeout);
  // POST /v1/{collection}/{id}/files: unpack the upload at `path` (copy_into_instance, _volume).
  Result<Json> copy_into(std::string_view collection, std::string_view id,
                         std::string_view upload_id, std::string_view path);
  // GETs every page of a list route; returns the first page's object with all items joined.
  Result<Json> fetch_all_pages(std::string_view path, const std::string& query = {});
  Result<Json> list_items(std::string_view path, const std::string& query = {});
  // GETs a text stream (a log) and hands it to on_chunk; see stream_logs.
  Status stream_text(std::string target, bool follow,
                     const std::function<bool(std::string_view)>& on_chunk);

  HttpClient http_;
  std::string api_key_;
};

}  // namespace gpurent::client
