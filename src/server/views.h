// The JSON that tenants and operators see (docs/api.md). These views leave out secrets (key and
// credential hashes) and internals, and spell times as RFC 3339 and money as integer micros.
#pragma once

#include "common/json.h"
#include "controller/controller.h"

namespace gpurent::server {

Json instance_view(const controller::Controller& controller, const model::Instance& instance);
Json node_view(const controller::Controller& controller, const model::Node& node);
Json tenant_view(const model::Tenant& tenant);
Json api_key_view(const model::ApiKey& key);
Json offer_view(const controller::Controller& controller, const controller::Offer& offer);
Json usage_view(const model::UsageRecord& usage);
Json transfer_view(const model::Transfer& transfer);
Json time_or_null(const std::optional<Timestamp>& t);

}  // namespace gpurent::server
