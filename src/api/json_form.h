// The JSON form of the API's types (src/api/): what the REST API shows and takes, times as RFC 3339
// text. nlohmann finds to_json by argument-dependent lookup: Json(api::Instance{...}).
#pragma once

#include "common/field_table.h"
#include "common/json.h"
#include "common/json_fields.h"

namespace gpurent::api {

template <schema::Described T>
void to_json(Json& j, const T& v) {
  j = schema::to_json_object<schema::TimeForm::kRfc3339>(v);
}

}  // namespace gpurent::api
