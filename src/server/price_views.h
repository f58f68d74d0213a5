// The API's forms of prices (api/billing.h): the price book's versions, an operator's change (PUT
// /v1/prices), spot price points and estimates (of an hour, and of a piece of work). Money is
// integer micro-units in fields ending in _micros, as everywhere in the API.
#pragma once

#include "api/billing.h"
#include "billing/billing.h"
#include "billing/work_estimate.h"
#include "common/json.h"
#include "common/result.h"
#include "controller/gpu_benchmarks.h"
#include "model/price_book.h"

namespace gpurent::server {

// The body of PUT /v1/prices: every field optional (see billing::PriceChange). Shapes only
// (kInvalid: unknown_field, invalid_field); the prices' bounds are the book's to check.
Result<billing::PriceChange> parse_price_change(const Json& body);
api::PriceVersion price_version_view(const model::PriceVersion& version);
// A point of the spot market, priced as billing prices it (the version in force at its time).
api::SpotPricePoint spot_point_view(const model::SpotPricePoint& point, Micros price);
api::Estimate estimate_view(const billing::Estimate& estimate, std::string_view currency);
// What `work` takes on `spec`'s GPUs of the estimate's type, from the type's measured ResNet-50
// figures (billing/work_estimate.h). 409 not_measured when no run of the type measured the
// work's precision.
Result<api::WorkEstimate> work_estimate_view(const controller::GpuBenchmarks& benchmarks,
                                             const model::InstanceSpec& spec,
                                             const billing::Estimate& hourly,
                                             const billing::TrainingWork& work);

}  // namespace gpurent::server
