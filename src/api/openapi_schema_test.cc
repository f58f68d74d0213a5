// Holds the API's typed bodies (src/api/) and the agent protocol's messages
// (model/agent_protocol.h) to docs/openapi.json's components.schemas, the document the binary
// serves: each field table against its schema, member by member (names, which are required, JSON
// types, enum values, nested objects by their own tables), so that the document cannot drift from
// what the code sends and reads. A drift fails naming the schema, the member and both sides.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "api/accounts.h"
#include "api/billing.h"
#include "api/fleet.h"
#include "api/monitoring.h"
#include "api/openapi_document.h"
#include "api/templates.h"
#include "api/workloads.h"
#include "common/field_table.h"
#include "common/json.h"
#include "model/agent_protocol.h"
#include "model/exec_protocol.h"
#include "model/file_copy.h"

namespace gpurent::api {
namespace {

// Both sides are brought to one form, a "shape": "string", "integer", "number", "boolean",
// "date-time" (a string of that format, or an integer of format "unix-ms"), "any" (no type said,
// or a JSON value the code passes on unread: matches every shape),
// {"enum": [names]}, {"nullable": shape}, {"array": shape}, {"map": shape} (an object of any
// keys), {"one_of": [shapes]}, or {"object": {"properties": {name: shape}, "required": [names]}}.
// Nullability is compared for the required members of views only: a member that may be left out
// may be null, and a request's null is absent (api/read_request.h).

template <class E>
Json enum_names() {
  std::vector<std::string> names;
  for (int i = 0; i < 64; ++i) {
    const std::string_view name = to_string(static_cast<E>(i));
    if (name == "unknown") break;
    names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());
  return {{"enum", names}};
}

template <class T>
Json shape_of();

enum class Body { kView, kRequest };

template <class T>
Json object_shape(Body body = Body::kView) {
  Json properties = Json::object();
  std::set<std::string> required;
  auto describe = [&](std::string_view name, const auto& member,
                      schema::Presence presence = schema::kRequired) {
    using M = std::remove_cvref_t<decltype(member)>;
    Json shape = shape_of<M>();
    if (presence == schema::kRequired) required.emplace(name);
    if ((presence != schema::kRequired || body == Body::kRequest) && shape.is_object() &&
        shape.contains("nullable")) {
      shape = shape["nullable"];
    }
    properties[std::string(name)] = std::move(shape);
  };
  const T probe{};
  fields(describe, probe);
  return {{"object", {{"properties", properties}, {"required", required}}}};
}

template <class... A>
Json variant_shape(const std::variant<A...>*) {
  std::vector<Json> shapes = {shape_of<A>()...};
  std::sort(shapes.begin(), shapes.end());
  return {{"one_of", shapes}};
}

template <class T>
Json shape_of() {
  if constexpr (std::is_same_v<T, std::string>) {
    return "string";
  } else if constexpr (std::is_same_v<T, bool>) {
    return "boolean";
  } else if constexpr (std::is_integral_v<T>) {
    return "integer";
  } else if constexpr (std::is_floating_point_v<T>) {
    return "number";
  } else if constexpr (std::is_same_v<T, Timestamp>) {
    return "date-time";
  } else if constexpr (std::is_same_v<T, Json>) {
    return "any";
  } else if constexpr (std::is_enum_v<T>) {
    return enum_names<T>();
  } else if constexpr (schema::is_optional_v<T>) {
    return {{"nullable", shape_of<typename T::value_type>()}};
  } else if constexpr (schema::is_vector_v<T>) {
    return {{"array", shape_of<typename T::value_type>()}};
  } else if constexpr (schema::is_map_v<T>) {
    return {{"map", shape_of<typename T::mapped_type>()}};
  } else if constexpr (schema::is_variant_v<T>) {
    return variant_shape(static_cast<const T*>(nullptr));
  } else if constexpr (schema::Described<T>) {
    return object_shape<T>();
  } else {
    return Json(T{}).type_name();  // a type with its own form (the telemetry's text)
  }
}

class Document {
 public:
  Document() {
    const std::string_view text = embedded::openapi_document();
    document_ = Json::parse(text.begin(), text.end());
  }

  const Json& component(const std::string& name) const {
    return document_.at("components").at("schemas").at(name);
  }

  Json shape(const Json& schema) const {
    if (schema.contains("$ref")) {
      const std::string ref = schema["$ref"];
      return shape(component(ref.substr(ref.rfind('/') + 1)));
    }
    // Before oneOf: an object's oneOf says which members it needs (gpu_type or gpu_types).
    if (schema.contains("properties")) return object(schema);
    if (schema.contains("allOf")) return all_of(schema["allOf"]);
    for (const char* key : {"oneOf", "anyOf"}) {
      if (schema.contains(key)) return one_of(schema[key]);
    }
    if (!schema.contains("type")) return "any";
    const Json& type = schema["type"];
    if (type.is_array()) {  // ["string", "null"]
      Json other = schema;
      std::vector<std::string> types = type;
      std::erase(types, "null");
      other["type"] = types.size() == 1 ? Json(types.front()) : Json(types);
      return types.size() < type.size() ? Json{{"nullable", shape(other)}} : shape(other);
    }
    if (type == "string") {
      if (schema.contains("enum")) {
        std::vector<std::string> names = schema["enum"];
        std::sort(names.begin(), names.end());
        return {{"enum", names}};
      }
      return schema.value("format", "") == "date-time" ? "date-time" : "string";
    }
    if (type == "array") return {{"array", shape(schema.value("items", Json::object()))}};
    if (type == "object") {
      if (schema.contains("properties")) return object(schema);
      if (schema.contains("additionalProperties")) {
        return {{"map", shape(schema["additionalProperties"])}};
      }
      return "any";
    }
    // The agent protocol's and the store's times are Unix milliseconds (model/json_form.h).
    if (type == "integer" && schema.value("format", "") == "unix-ms") return "date-time";
    return type;  // integer, number, boolean
  }

 private:
  Json object(const Json& schema) const {
    Json properties = Json::object();
    std::set<std::string> required;
    if (schema.contains("required")) required = schema["required"].get<std::set<std::string>>();
    for (const auto& [name, property] : schema["properties"].items()) {
      Json shape_of_property = shape(property);
      if (!required.contains(name) && shape_of_property.is_object() &&
          shape_of_property.contains("nullable")) {
        shape_of_property = shape_of_property["nullable"];
      }
      properties[name] = std::move(shape_of_property);
    }
    return {{"object", {{"properties", properties}, {"required", required}}}};
  }

  Json all_of(const Json& parts) const {
    if (parts.size() == 1) return shape(parts[0]);
    Json merged = {{"type", "object"}, {"properties", Json::object()}, {"required", Json::array()}};
    for (const Json& part : parts) {
      const Json& resolved = part.contains("$ref") ? component(ref_name(part)) : part;
      const Json properties = resolved.value("properties", Json::object());
      for (const auto& [name, property] : properties.items()) merged["properties"][name] = property;
      for (const auto& name : resolved.value("required", Json::array())) {
        merged["required"].push_back(name);
      }
    }
    return object(merged);
  }

  Json one_of(const Json& alternatives) const {
    std::vector<Json> shapes;
    bool nullable = false;
    for (const Json& alternative : alternatives) {
      if (alternative.value("type", Json()) == "null") {
        nullable = true;
      } else {
        shapes.push_back(shape(alternative));
      }
    }
    std::sort(shapes.begin(), shapes.end());
    Json shape = shapes.size() == 1 ? shapes.front() : Json{{"one_of", shapes}};
    return nullable ? Json{{"nullable", shape}} : shape;
  }

  static std::string ref_name(const Json& schema) {
    const std::string ref = schema["$ref"];
    return ref.substr(ref.rfind('/') + 1);
  }

  Json document_;
};

// Where the two shapes differ, one line each: "Instance.volumes[].mount_path: ...".
void differences(const std::string& path, const Json& spec, const Json& code,
                 std::vector<std::string>& out) {
  if (spec == "any" || code == "any" || spec == code) return;
  // A string the document enumerates and the code keeps as text (a node's status, a GPU's
  // quarantine cause): the code does not list the values to compare.
  if (code == "string" && spec.is_object() && spec.contains("enum")) return;
  const bool objects =
      spec.is_object() && code.is_object() && spec.contains("object") && code.contains("object");
  if (!objects) {
    for (const char* wrapper : {"nullable", "array", "map"}) {
      if (spec.is_object() && code.is_object() && spec.contains(wrapper) &&
          code.contains(wrapper)) {
        const std::string inner = std::string(wrapper) == "array" ? "[]" : "";
        return differences(path + inner, spec[wrapper], code[wrapper], out);
      }
    }
    out.push_back(path + ": docs/openapi.json says " + spec.dump() + ", the code " + code.dump());
    return;
  }
  const Json& a = spec["object"];
  const Json& b = code["object"];
  for (const auto& [name, shape] : a["properties"].items()) {
    if (!b["properties"].contains(name)) {
      out.push_back(path + "." + name + ": in docs/openapi.json, not in the code's table");
    } else {
      differences(path + "." + name, shape, b["properties"][name], out);
    }
  }
  for (const auto& [name, shape] : b["properties"].items()) {
    if (!a["properties"].contains(name)) {
      out.push_back(path + "." + name + ": in the code's table (" + shape.dump() +
                    "), not in docs/openapi.json");
    }
  }
  if (a["required"] != b["required"]) {
    out.push_back(path + ": docs/openapi.json requires " + a["required"].dump() +
                  ", the code's table " + b["required"].dump());
  }
}

template <class T>
void expect_matches(const Document& document, const std::string& name, Body body = Body::kView) {
  std::vector<std::string> found;
  differences(name, document.shape(document.component(name)), object_shape<T>(body), found);
  std::string lines;
  for (const auto& line : found) lines += "  " + line + "\n";
  EXPECT_TRUE(found.empty()) << "components.schemas." << name << " differs from its C++ type:\n"
                             << lines;
}

TEST(OpenApiSchemas, TheApisBodiesAreWhatTheDocumentSays) {
  const Document document;
  expect_matches<InstanceCreate>(document, "InstanceCreate", Body::kRequest);
  expect_matches<Instance>(document, "Instance");
  expect_matches<JobCreate>(document, "JobCreate", Body::kRequest);
  expect_matches<Job>(document, "Job");
  expect_matches<JobTask>(document, "JobTask");
  expect_matches<Whoami>(document, "Whoami");
  expect_matches<TenantCreate>(document, "TenantCreate", Body::kRequest);
  expect_matches<Tenant>(document, "Tenant");
  expect_matches<TenantWithBalance>(document, "TenantWithBalance");
  expect_matches<ApiKeyCreate>(document, "ApiKeyCreate", Body::kRequest);
  expect_matches<ApiKey>(document, "ApiKey");
  expect_matches<ApiKeyCreated>(document, "ApiKeyCreated");
  expect_matches<SessionCreate>(document, "SessionCreate", Body::kRequest);
  expect_matches<Session>(document, "Session");
  expect_matches<Balance>(document, "Balance");
  expect_matches<UsageItem>(document, "UsageItem");
  expect_matches<VolumeUsageItem>(document, "VolumeUsageItem");
  expect_matches<Usage>(document, "Usage");
  expect_matches<Transfer>(document, "Transfer");
  expect_matches<Topup>(document, "Topup", Body::kRequest);
  expect_matches<TopupResult>(document, "TopupResult");
  expect_matches<GpuQuarantine>(document, "GpuQuarantine");
  expect_matches<NodeGpu>(document, "NodeGpu");
  expect_matches<Node>(document, "Node");
  expect_matches<Offer>(document, "Offer");
  expect_matches<VolumeCreate>(document, "VolumeCreate", Body::kRequest);
  expect_matches<Volume>(document, "Volume");
  expect_matches<Event>(document, "Event");
  expect_matches<TemplateSet>(document, "TemplateSet", Body::kRequest);
  expect_matches<Template>(document, "Template");
  expect_matches<GpuType>(document, "GpuType");
  expect_matches<Quota>(document, "Quota");
  expect_matches<QuotaSet>(document, "QuotaSet", Body::kRequest);
  expect_matches<JoinTokenCreate>(document, "JoinTokenCreate", Body::kRequest);
  expect_matches<JoinToken>(document, "JoinToken");
  expect_matches<ServiceTicket>(document, "ServiceTicket");
  expect_matches<UploadCreate>(document, "UploadCreate", Body::kRequest);
  expect_matches<Upload>(document, "Upload");
  expect_matches<model::CopyResult>(document, "CopyResult");
  expect_matches<model::ExecRequest>(document, "ExecRequest", Body::kRequest);
}

TEST(OpenApiSchemas, TheMoneyBodiesAreWhatTheDocumentSays) {
  const Document document;
  expect_matches<ReservationCreate>(document, "ReservationCreate", Body::kRequest);
  expect_matches<Reservation>(document, "Reservation");
  expect_matches<PackageProduct>(document, "PackageProduct");
  expect_matches<PackagePurchase>(document, "PackagePurchase", Body::kRequest);
  expect_matches<Package>(document, "Package");
  expect_matches<BalanceSettingsSet>(document, "BalanceSettingsSet", Body::kRequest);
  expect_matches<BalanceSettings>(document, "BalanceSettings");
  expect_matches<InvoiceLine>(document, "InvoiceLine");
  expect_matches<InvoiceSummary>(document, "InvoiceSummary");
  expect_matches<Invoice>(document, "Invoice");
  expect_matches<RevenueReport>(document, "RevenueReport");
  expect_matches<PriceVersion>(document, "PriceVersion");
  expect_matches<Prices>(document, "Prices");
  expect_matches<PriceChange>(document, "PriceChange", Body::kRequest);
  expect_matches<SpotPricePoint>(document, "SpotPricePoint");
  expect_matches<SpotPrices>(document, "SpotPrices");
  expect_matches<Estimate>(document, "Estimate");
}

TEST(OpenApiSchemas, TheMonitoringBodiesAreWhatTheDocumentSays) {
  const Document document;
  expect_matches<AlertRule>(document, "AlertRule");
  expect_matches<AlertRuleCreate>(document, "AlertRuleCreate", Body::kRequest);
  expect_matches<IdleAlertSet>(document, "IdleAlertSet", Body::kRequest);
  expect_matches<AlertSubject>(document, "AlertSubject");
  expect_matches<Alert>(document, "Alert");
  expect_matches<AlertTransition>(document, "AlertTransition");
  expect_matches<AlertList>(document, "AlertList");
  expect_matches<AlertAcknowledged>(document, "AlertAcknowledged");
  expect_matches<MetricSeries>(document, "MetricSeries");
}

TEST(OpenApiSchemas, TheAgentProtocolIsWhatTheDocumentSays) {
  const Document document;
  expect_matches<model::Gpu>(document, "Gpu");
  expect_matches<model::VolumeMount>(document, "VolumeMount");
  expect_matches<model::NodeRegistration>(document, "NodeRegistration");
  expect_matches<model::RegistrationResult>(document, "RegistrationResult");
  expect_matches<model::JobMemberPlacement>(document, "JobMemberPlacement");
  expect_matches<model::WorkloadSpec>(document, "WorkloadSpec");
  expect_matches<model::DesiredState>(document, "DesiredState");
  expect_matches<model::WorkloadStatus>(document, "WorkloadStatus");
  expect_matches<model::NodeReport>(document, "NodeReport");
}

// The check itself: a member renamed, retyped or no longer required on either side is found.
TEST(OpenApiSchemas, ADriftIsFoundAndNamed) {
  const Json code = shape_of<Balance>();
  std::vector<std::string> found;
  differences("Balance", code, code, found);
  EXPECT_TRUE(found.empty());
  Json renamed = code;
  renamed["object"]["properties"]["balance"] = renamed["object"]["properties"]["balance_micros"];
  renamed["object"]["properties"].erase("balance_micros");
  differences("Balance", renamed, code, found);
  ASSERT_EQ(found.size(), 2u);  // one in the document only, one in the code only
  EXPECT_NE(found[0].find("Balance.balance:"), std::string::npos);
  found.clear();
  Json retyped = code;
  retyped["object"]["properties"]["balance_micros"] = "string";
  differences("Balance", retyped, code, found);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("Balance.balance_micros: docs/openapi.json says \"string\""),
            std::string::npos);
}

}  // namespace
}  // namespace gpurent::api
