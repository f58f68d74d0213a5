// The JSON form of the API's types (src/api/): what the REST API shows and takes, times as RFC 3339
// text. nlohmann finds these by argument-dependent lookup: Json(api::Instance{...}),
// json.get<api::Instance>(). Reading is lenient (common/json_fields.h: what a server of another
// version leaves out or types otherwise keeps its default); the server reads requests with
// api/read_request.h instead.
#pragma once

#include "common/field_table.h"
#include "common/json.h"
#include "common/json_fields.h"

namespace gpurent::api {

template <schema::Described T>
void to_json(Json& j, const T& v) {
  j = schema::to_json_object<schema::TimeForm::kRfc3339>(v);
}

template <schema::Described T>
void from_json(const Json& j, T& v) {
  v = T{};
  schema::read_json_leniently<schema::TimeForm::kRfc3339>(j, v);
}

}  // namespace gpurent::api
