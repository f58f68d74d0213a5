// The JSON that tenants and operators see (docs/api.md). These views leave out secrets (key and
// credential hashes) and internals, and spell times as RFC 3339 and money as integer micros. Each
// is built as its typed body of src/api/ and written by that type's field table, the one that
// api/openapi_schema_test.cc holds to docs/openapi.json.
#pragma once

#include <functional>
#include <string_view>

#include "api/fleet.h"
#include "common/json.h"
#include "common/result.h"
#include "controller/controller.h"

namespace gpurent::server {

Json instance_view(const controller::Controller& controller, const model::Instance& instance);
// A quarantined GPU (model/gpu_quarantine.h), as node views list it.
Json gpu_quarantine_view(const model::GpuQuarantine& quarantine);
Json node_view(const controller::Controller& controller, const model::Node& node);
Json tenant_view(const model::Tenant& tenant);
Json api_key_view(const model::ApiKey& key);
// With what the type's GPUs measure (controller/gpu_benchmarks.h), and per price.
Json offer_view(const controller::Controller& controller, const controller::Offer& offer);
// How GET /v1/offers?sort= orders offer views: "gpu_type" (the default), "price" (cheapest first),
// "perf_per_price" or "spot_perf_per_price" (most measured TFLOPS per currency unit an hour
// first), "images_per_price" (most ResNet-50 images per currency unit first); offers without the
// figure come last. 400 invalid_sort for another.
using OfferOrder = std::function<bool(const Json&, const Json&)>;
Result<OfferOrder> offer_order(std::string_view sort);
// A node's benchmark request (model/benchmark.h), its GPUs by device index.
Json benchmark_request_view(const model::Node& node, const model::BenchmarkRequest& request);
// The benchmark history of each of the node's GPUs measured, by index.
Json node_benchmarks_view(const controller::Controller& controller, const model::Node& node);
// A training benchmark run (model/benchmark.h), throughput in images a second.
api::TrainingRun training_view(const model::TrainingRun& run);
// POST /v1/training-benchmarks' answer.
Json training_record_view(const controller::RecordedTraining& recorded);
Json usage_view(const model::UsageRecord& usage);
Json transfer_view(const model::Transfer& transfer, std::string_view currency);

// A job lists its tasks when it has at most this many, or when asked (GET /v1/jobs/{id}?tasks=1);
// otherwise only how many tasks are in each state.
inline constexpr int kMaxTasksInJobView = 1000;
Json job_view(const model::Job& job, bool all_tasks = false);
Json reservation_view(const model::Reservation& reservation, std::string_view currency);
Json quota_view(const model::Quota& quota);
Json template_view(const model::Template& t);
Json volume_view(const model::Volume& volume);
Json event_view(const model::Event& event);
Json audit_view(const model::AuditRecord& entry);
// A volume's line in GET /v1/billing/usage.
Json volume_usage_view(const model::Volume& volume);

}  // namespace gpurent::server
