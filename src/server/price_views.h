// The API's forms of prices (api/billing.h): the price book's versions, an operator's change (PUT
// /v1/prices), spot price points and estimates. Money is integer micro-units in fields ending in
// _micros, as everywhere in the API.
#pragma once

#include "api/billing.h"
#include "billing/billing.h"
#include "common/json.h"
#include "common/result.h"
#include "model/price_book.h"

namespace gpurent::server {

// The body of PUT /v1/prices: every field optional (see billing::PriceChange). Shapes only
// (kInvalid: unknown_field, invalid_field); the prices' bounds are the book's to check.
Result<billing::PriceChange> parse_price_change(const Json& body);
api::PriceVersion price_version_view(const model::PriceVersion& version);
// A point of the spot market, priced as billing prices it (the version in force at its time).
api::SpotPricePoint spot_point_view(const model::SpotPricePoint& point, Micros price);
api::Estimate estimate_view(const billing::Estimate& estimate, std::string_view currency);

}  // namespace gpurent::server
