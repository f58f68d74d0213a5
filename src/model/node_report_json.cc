#include "model/node_report_json.h"

#include "model/json_reader.h"
#include "model/telemetry.h"

namespace gpurent::model {

using namespace json_reader;

namespace {

// The telemetry member's text: a string, or null for none.
Status read_telemetry_text(od::value value, const Path& path, std::optional<std::string>& out) {
  od::json_type type;
  if (const auto code = value.type().get(type)) return fail(member_error(path.text(), code));
  if (type != od::json_type::string && type != od::json_type::null) {
    return fail(Error::invalid("invalid_message", std::string(kTelemetryIsAFrame)));
  }
  return read(value, path, out);
}

}  // namespace

// The telemetry member decoded. Static rather than in the anonymous namespace: read_object finds
// it by argument-dependent lookup, which searches gpurent::model itself.
static Status read_json(od::value value, const Path& path, TelemetryBatch& out) {
  std::optional<std::string> text;
  GPURENT_CHECK(read_telemetry_text(value, path, text));
  if (!text) {
    out = {};
    return {};
  }
  GPURENT_TRY(batch, decode_telemetry_text(*text));
  out = std::move(batch);
  return {};
}

Result<NodeReport> read_node_report(std::string_view json,
                                    std::optional<std::string>* telemetry_text) {
  GPURENT_TRY(object, open_object(json));
  NodeReport report;
  if (!telemetry_text) {
    GPURENT_CHECK(read_object(object, Path{}, report));
    return report;
  }
  telemetry_text->reset();
  GPURENT_CHECK(read_object(
      object, Path{}, report, [&](std::string_view key, od::value value) -> std::optional<Status> {
        if (key != "telemetry") return std::nullopt;
        return read_telemetry_text(value, Path{nullptr, key}, *telemetry_text);
      }));
  return report;
}

}  // namespace gpurent::model
