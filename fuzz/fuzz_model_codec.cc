// The model's JSON forms (model/codec.h, model/json_form.h): what the store keeps and the agent
// protocol sends. The first byte picks a type, the rest is a JSON document read as that type.
//
// Invariants: reading is an Error value or a std::exception that decode_message turns into one
// (the documented contract of from_json), never a crash or undefined behaviour; what was read
// is written and read back to the same JSON (decode(encode(x)) == x); the direct writer
// (common/json_writer.h) writes byte for byte what nlohmann's dump() writes, for every type, and
// instance_json, usage_record_json, desired_state_json say so of themselves; an instance's store
// row (instance_row_json) reads back through instance_from_row.
#include <cstdint>
#include <string>
#include <string_view>

#include "common/json.h"
#include "common/json_writer.h"
#include "fuzz_check.h"
#include "model/agent_protocol.h"
#include "model/codec.h"
#include "model/json_form.h"
#include "model/price_book.h"

namespace gpurent::model {
namespace {

using fuzz::shown;

std::string dumped(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

template <class T>
void check_type(const Json& document) {
  auto first = decode_message<T>(document);
  if (!first) {
    FUZZ_CHECK(first.error().kind == ErrorKind::kInvalidArgument, "{}", first.error().message);
    return;
  }
  const Json written = Json(*first);
  auto second = decode_message<T>(written);
  FUZZ_CHECK(second.has_value(), "{} was read from {} but its own form {} is refused: {}",
             typeid(T).name(), shown(dumped(document)), shown(dumped(written)),
             second.error().message);
  const Json rewritten = Json(*second);
  FUZZ_CHECK(rewritten == written, "{}: {} read back as {}", typeid(T).name(),
             shown(dumped(written)), shown(dumped(rewritten)));
  // Strings read from JSON are valid UTF-8: dump() cannot throw, and the direct writer agrees.
  const std::string text = written.dump();
  if constexpr (schema::Described<T>) {
    std::string direct;
    JsonWriter(direct).object(*first);
    FUZZ_CHECK(direct == text, "JsonWriter wrote {}\n  dump() wrote {}", shown(direct),
               shown(text));
  }
  if constexpr (std::is_same_v<T, Instance>) {
    FUZZ_CHECK(instance_json(*first) == text, "instance_json is not dump()");
    const Instance& instance = *first;
    const bool member_row = !instance.job_id.empty() && instance.job_task >= 0;
    if (!member_row) {
      const Instance row = instance_from_row(Json::parse(instance_row_json(instance)),
                                             [](std::string_view) { return nullptr; });
      FUZZ_CHECK(Json(row) == written, "the row {} reads back as {}",
                 shown(instance_row_json(instance)), shown(dumped(Json(row))));
    }
  }
  if constexpr (std::is_same_v<T, UsageRecord>) {
    FUZZ_CHECK(usage_record_json(*first) == text, "usage_record_json is not dump()");
  }
  if constexpr (std::is_same_v<T, DesiredState>) {
    FUZZ_CHECK(desired_state_json(*first) == text, "desired_state_json is not dump()");
  }
}

using Check = void (*)(const Json&);
constexpr Check kChecks[] = {
    check_type<Instance>,
    check_type<InstanceSpec>,
    check_type<Job>,
    check_type<JobTask>,
    check_type<UsageRecord>,
    check_type<Node>,
    check_type<Gpu>,
    check_type<Template>,
    check_type<Tenant>,
    check_type<ApiKey>,
    check_type<JoinToken>,
    check_type<IdempotencyRecord>,
    check_type<Volume>,
    check_type<VolumeMount>,
    check_type<Event>,
    check_type<GpuQuarantine>,
    check_type<Reservation>,
    check_type<Package>,
    check_type<PackageProduct>,
    check_type<Downtime>,
    check_type<Quota>,
    check_type<BalanceSettings>,
    check_type<WorkloadSpec>,
    check_type<DesiredState>,
    check_type<PriceVersion>,
    check_type<SpotPricePoint>,
    check_type<JobMemberPlacement>,
};

}  // namespace
}  // namespace gpurent::model

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpurent;
  fuzz::Input input(data, size);
  const uint8_t type = input.byte();
  const std::string_view text = input.rest();
  auto document = parse_json_object(text);
  if (!document) return 0;
  try {
    model::kChecks[type % std::size(model::kChecks)](*document);
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, "an exception escaped: {}", e.what());
  }
  return 0;
}
