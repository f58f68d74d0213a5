// JSON for the objects of model/accounts.h (the store's bodies), as model/codec.h does for the
// rest.
#pragma once

#include "common/json.h"
#include "model/accounts.h"

namespace gpurent::model {

void to_json(Json& j, const PackageProduct& v);
void from_json(const Json& j, PackageProduct& v);
void to_json(Json& j, const Package& v);
void from_json(const Json& j, Package& v);
void to_json(Json& j, const BalanceSettings& v);
void from_json(const Json& j, BalanceSettings& v);
void to_json(Json& j, const Downtime& v);
void from_json(const Json& j, Downtime& v);

}  // namespace gpurent::model
