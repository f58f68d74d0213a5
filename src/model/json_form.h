// The JSON form of every model type that has a field table (common/field_table.h): what the store
// keeps and the agent protocol sends, times as Unix milliseconds. nlohmann finds these two by
// argument-dependent lookup: Json(instance), json.get<model::Instance>(). Reading is
// read_json_object's (common/json_fields.h): it throws on a document that is not the type's; a
// type whose older documents lack members declares upgrade_older(json, object) beside its table.
#pragma once

#include "common/field_table.h"
#include "common/json.h"
#include "common/json_fields.h"

namespace gpurent::model {

template <schema::Described T>
void to_json(Json& j, const T& v) {
  j = schema::to_json_object<schema::TimeForm::kUnixMs>(v);
}

template <schema::Described T>
void from_json(const Json& j, T& v) {
  v = T{};
  schema::read_json_object<schema::TimeForm::kUnixMs>(j, v);
}

}  // namespace gpurent::model
