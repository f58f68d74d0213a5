// What the API's request bodies mean: each POST/PUT body read into the type the controller takes,
// or refused with the field at fault (400 invalid_field / unknown_field, as common/json.h's
// readers say). Shapes and bounds only: what depends on state (ownership, capacity, prices) is the
// controller's to check.
#pragma once

#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "billing/work_estimate.h"
#include "common/json.h"
#include "common/result.h"
#include "controller/controller.h"
#include "model/accounts.h"
#include "model/instance.h"
#include "model/job.h"
#include "model/template.h"

namespace gpurent::server {

inline constexpr size_t kMaxNameLength = 64;
inline constexpr int64_t kMaxCount = 1'000'000;
inline constexpr int64_t kMaxQuotaWeight = 1'000'000;

// Refuses a field that is in neither list (a misspelt field must not be silently ignored).
Status reject_unknown_fields(const Json& body, std::span<const std::string_view> known,
                             std::span<const std::string_view> also_known = {});
Status reject_unknown_fields(const Json& body, std::initializer_list<std::string_view> known);
// Letters, digits, '-', '_' and '.'.
bool valid_name(std::string_view name);
// Present and not null.
bool has_value(const Json& body, std::string_view key);

// POST /v1/instances (and /v1/estimate): what an instance runs and needs, and how it queues.
Result<model::InstanceSpec> parse_instance_spec(const Json& body);
// POST /v1/estimate: a launch (an instance's fields) and, optionally, the work it would do
// (api::EstimateWork: model resnet50, 1..kMaxEpochs epochs of 1..kMaxImagesPerEpoch images).
inline constexpr int64_t kMaxEpochs = 100'000;
inline constexpr int64_t kMaxImagesPerEpoch = 10'000'000'000;
struct EstimateRequest {
  model::InstanceSpec spec;
  std::optional<billing::TrainingWork> work;
};
Result<EstimateRequest> parse_estimate(const Json& body);
// POST /v1/jobs: what each member runs (an instance's fields) and the job's shape.
Result<model::JobSpec> parse_job_spec(const Json& body);
// POST /v1/volumes: {name, size_gb[, node_id]}.
Result<controller::NewVolume> parse_volume(const Json& body);
// PUT /v1/packages/products: {name, gpu_type, gpu_hours, price_micros, validity_days}.
Result<model::PackageProduct> parse_package_product(const Json& body);
// POST /v1/packages: {product}.
Result<std::string> parse_package_purchase(const Json& body);
// POST /v1/api-keys (api::ApiKeyCreate): its tenant as given (an id or a name), role, name, at most
// kMaxScopes scopes, expiry. What the caller may grant is the controller's to check.
inline constexpr size_t kMaxScopes = 32;
Result<controller::NewApiKey> parse_api_key(const Json& body);
// PUT /v1/billing/settings: {tenant_id, warning_threshold_micros, credit_limit_micros}.
Result<model::BalanceSettings> parse_balance_settings(const Json& body);
// POST /v1/reservations (and /quote): a window {start, end} or a term {term_days[, start]}.
Result<controller::NewReservation> parse_reservation(const Json& body);
// PUT /v1/quotas/{tenant}: the whole quota (an absent field: no limit; weight 1).
Result<model::Quota> parse_quota(const Json& body, std::string tenant_id);
// PUT /v1/templates/{name}: an operator's template, whole.
Result<model::Template> parse_template(const Json& body, std::string name);

}  // namespace gpurent::server
