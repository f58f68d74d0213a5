// The API's request bodies (server/request_bodies.h) from arbitrary bytes: the first byte picks the
// route's reader, the rest is the body, parsed as the server parses it (parse_json_object).
//
// Invariants: nothing throws; a refusal is an Error of a client's kind (400 or 422) with a code;
// a body that is accepted means the same after a trip through the API's typed form as the C++ SDK
// sends it (api/read_request.h in, api/json_form.h out: Json(api::InstanceCreate{...})), and the
// typed form of the readers with hand-written checks round-trips through the JSON the SDK would
// write for it.
#include <cstdint>
#include <string>
#include <string_view>

#include "api/fleet.h"
#include "api/read_request.h"
#include "api/templates.h"
#include "api/workloads.h"
#include "common/json.h"
#include "fuzz_check.h"
#include "model/json_form.h"
#include "server/request_bodies.h"

namespace gpurent::server {
namespace {

using fuzz::shown;

void check_refusal(const Error& error, std::string_view body) {
  FUZZ_CHECK(error.kind == ErrorKind::kInvalidArgument || error.kind == ErrorKind::kUnprocessable,
             "a body refused as {} ({}): {}", error_kind_title(error.kind), error.code,
             shown(body));
  FUZZ_CHECK(!error.code.empty() && !error.message.empty(), "an error without code or message");
}

// The model form of a reader's result, to compare two of them.
template <class T>
std::string model_form(const T& value) {
  Json json;
  if constexpr (std::is_same_v<T, model::JobSpec>) {
    model::to_json(json["task"], value.task);
    json["nodes"] = value.nodes;
    json["array"] = value.array;
    json["retries"] = value.retries;
  } else {
    model::to_json(json, value);
  }
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// `read` accepted `body` as `first`: the typed form of the body (ApiType), written as the SDK
// writes it, is read back to the same value.
template <class ApiType, class Read>
void check_typed_trip(const Json& body, const auto& first, Read read) {
  auto typed = api::read_request<ApiType>(
      body, [](std::string_view member, std::string_view text, std::string_view names) {
        return api::unknown_name(member, text, names);
      });
  // The reader may refuse names the typed form takes (unknown_name_of_workload's 422s), never the
  // other way round.
  FUZZ_CHECK(typed.has_value(), "accepted by its reader but not by api::read_request: {}",
             typed.error().message);
  const Json sent = Json(*typed);
  auto second = read(sent);
  FUZZ_CHECK(second.has_value(), "the SDK's form {} of an accepted body is refused: {}",
             shown(sent.dump(-1, ' ', false, Json::error_handler_t::replace)),
             second.error().message);
  FUZZ_CHECK(model_form(first) == model_form(*second), "{} and its SDK form {} differ: {} vs {}",
             shown(body.dump()), shown(sent.dump()), shown(model_form(first)),
             shown(model_form(*second)));
}

void check_body(uint8_t route, std::string_view text) {
  auto parsed = parse_json_object(text);
  if (!parsed) {
    check_refusal(parsed.error(), text);
    return;
  }
  const Json& body = *parsed;
  const auto refused_or = [&](const auto& result, auto on_accepted) {
    if (!result) {
      check_refusal(result.error(), text);
    } else {
      on_accepted(*result);
    }
  };
  switch (route % 9) {
    case 0:
      refused_or(parse_instance_spec(body), [&](const model::InstanceSpec& spec) {
        FUZZ_CHECK(spec.gpu_count >= 0, "{}", model_form(spec));
        check_typed_trip<api::InstanceCreate>(body, spec, parse_instance_spec);
      });
      break;
    case 1:
      refused_or(parse_job_spec(body), [&](const model::JobSpec& spec) {
        FUZZ_CHECK(spec.nodes >= 1 && spec.array >= 1 && spec.retries >= 0, "{}", model_form(spec));
        check_typed_trip<api::JobCreate>(body, spec, parse_job_spec);
      });
      break;
    case 2:
      refused_or(parse_volume(body), [&](const controller::NewVolume& volume) {
        FUZZ_CHECK(volume.size_gb >= 1 && !volume.name.empty(), "{}", shown(text));
        const Json sent = Json(api::VolumeCreate{
            .name = volume.name,
            .size_gb = volume.size_gb,
            .node_id = volume.node_id.empty() ? std::nullopt : std::optional(volume.node_id)});
        const auto again = parse_volume(sent);
        FUZZ_CHECK(again && again->name == volume.name && again->size_gb == volume.size_gb &&
                       again->node_id == volume.node_id,
                   "{} read back otherwise", shown(sent.dump()));
      });
      break;
    case 3:
      refused_or(parse_package_product(body), [&](const model::PackageProduct& product) {
        const Json sent = {{"name", product.name},
                           {"gpu_type", product.gpu_type},
                           {"gpu_hours", product.gpu_hours},
                           {"price_micros", product.price},
                           {"validity_days", product.validity_days}};
        const auto again = parse_package_product(sent);
        FUZZ_CHECK(again && model_form(*again) == model_form(product), "{}", shown(sent.dump()));
      });
      break;
    case 4:
      refused_or(parse_package_purchase(body), [&](const std::string& product) {
        FUZZ_CHECK(body.at("product") == product, "{}", shown(product));
      });
      break;
    case 5:
      refused_or(parse_balance_settings(body), [&](const model::BalanceSettings& settings) {
        FUZZ_CHECK(settings.warning_threshold >= 0 && settings.credit_limit >= 0, "{}",
                   shown(text));
        const Json sent = {{"tenant_id", settings.tenant_id},
                           {"warning_threshold_micros", settings.warning_threshold},
                           {"credit_limit_micros", settings.credit_limit}};
        const auto again = parse_balance_settings(sent);
        FUZZ_CHECK(again && model_form(*again) == model_form(settings), "{}", shown(sent.dump()));
      });
      break;
    case 6:
      refused_or(parse_reservation(body), [&](const controller::NewReservation& reservation) {
        FUZZ_CHECK(reservation.gpu_count >= 1 && !reservation.gpu_type.empty(), "{}", shown(text));
        FUZZ_CHECK(reservation.term_days ? *reservation.term_days >= 1
                                         : reservation.end > reservation.start,
                   "a reservation without a term or a window: {}", shown(text));
      });
      break;
    case 7:
      refused_or(parse_quota(body, "t-fuzz"), [&](const model::Quota& quota) {
        FUZZ_CHECK(quota.weight >= 1 && quota.tenant_id == "t-fuzz", "{}", model_form(quota));
        Json sent = {{"max_gpus_per_type", quota.max_gpus_per_type}, {"weight", quota.weight}};
        if (quota.max_instances) sent["max_instances"] = *quota.max_instances;
        const auto again = parse_quota(sent, "t-fuzz");
        FUZZ_CHECK(again && model_form(*again) == model_form(quota), "{}", shown(sent.dump()));
      });
      break;
    case 8:
      refused_or(parse_template(body, "fuzz"), [&](const model::Template& t) {
        FUZZ_CHECK(t.name == "fuzz", "{}", t.name);
        check_typed_trip<api::TemplateSet>(body, t,
                                           [](const Json& j) { return parse_template(j, "fuzz"); });
      });
      break;
  }
}

}  // namespace
}  // namespace gpurent::server

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpurent::fuzz::Input input(data, size);
  const uint8_t route = input.byte();
  const std::string_view body = input.rest();
  try {
    gpurent::server::check_body(route, body);
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, "an exception escaped reading {}: {}", gpurent::fuzz::shown(body), e.what());
  }
  return 0;
}
