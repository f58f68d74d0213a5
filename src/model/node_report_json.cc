#include "model/node_report_json.h"

#include <fmt/format.h>

#include <simdjson.h>
#include <climits>

#include "common/json.h"
#include "model/telemetry.h"

namespace gpurent::model {

namespace {

namespace od = simdjson::ondemand;

Error malformed(std::string_view why) {
  return Error::invalid("malformed_json", fmt::format("body is not valid JSON: {}", why));
}

// A member that could not be read: a type or range error is the message's fault, anything else
// (an unclosed string, a stray character) the JSON's.
Error member_error(std::string_view member, simdjson::error_code code) {
  if (code == simdjson::INCORRECT_TYPE || code == simdjson::NUMBER_OUT_OF_RANGE) {
    return Error::invalid(
        "invalid_message",
        fmt::format("{}: {}", member,
                    code == simdjson::INCORRECT_TYPE ? "wrong type" : "number out of range"));
  }
  return malformed(simdjson::error_message(code));
}

Error missing(std::string_view member) {
  return Error::invalid("invalid_message", fmt::format("{} is required", member));
}

// The value as T; null reads as nullopt where T is optional.
template <class T>
Status read(od::value value, std::string_view member, T& out) {
  if constexpr (std::is_same_v<T, std::string>) {
    std::string_view text;
    if (const auto code = value.get_string().get(text)) return fail(member_error(member, code));
    out.assign(text);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    if (const auto code = value.get_int64().get(out)) return fail(member_error(member, code));
  } else {
    static_assert(std::is_same_v<T, bool>);
    if (const auto code = value.get_bool().get(out)) return fail(member_error(member, code));
  }
  return {};
}

template <class T>
Status read(od::value value, std::string_view member, std::optional<T>& out) {
  bool null = false;
  if (const auto code = value.is_null().get(null)) return fail(member_error(member, code));
  if (null) {
    out.reset();
    return {};
  }
  T present{};
  GPURENT_CHECK(read(value, member, present));
  out = std::move(present);
  return {};
}

// Calls on_member(key, value) for each member of `object`, in order.
template <class OnMember>
Status for_each_member(od::object object, OnMember on_member) {
  for (auto field : object) {
    std::string_view key;
    if (const auto code = field.unescaped_key().get(key))
      return fail(malformed(simdjson::error_message(code)));
    od::value value;
    if (const auto code = field.value().get(value))
      return fail(malformed(simdjson::error_message(code)));
    GPURENT_CHECK(on_member(key, value));
  }
  return {};
}

Result<WorkloadStatus> read_workload(od::value value) {
  od::object object;
  if (const auto code = value.get_object().get(object)) {
    return fail(member_error("workloads[]", code));
  }
  WorkloadStatus workload;
  bool has_id = false, has_run = false, has_phase = false;
  std::optional<int64_t> exit_code;
  GPURENT_CHECK(for_each_member(object, [&](std::string_view key, od::value member) -> Status {
    if (key == "instance_id") {
      has_id = true;
      return read(member, "workloads[].instance_id", workload.instance_id);
    }
    if (key == "run") {
      has_run = true;
      return read(member, "workloads[].run", workload.run);
    }
    if (key == "phase") {
      has_phase = true;
      std::string phase;
      GPURENT_CHECK(read(member, "workloads[].phase", phase));
      if (!parse_workload_phase(phase, &workload.phase)) {
        return fail(Error::invalid("invalid_message", fmt::format("unknown phase {}", phase)));
      }
      return {};
    }
    if (key == "exit_code") return read(member, "workloads[].exit_code", exit_code);
    if (key == "message") return read(member, "workloads[].message", workload.message);
    return {};
  }));
  if (!has_id) return fail(missing("workloads[].instance_id"));
  if (!has_run) return fail(missing("workloads[].run"));
  if (!has_phase) return fail(missing("workloads[].phase"));
  if (exit_code) {
    if (*exit_code < INT_MIN || *exit_code > INT_MAX) {
      return fail(member_error("workloads[].exit_code", simdjson::NUMBER_OUT_OF_RANGE));
    }
    workload.exit_code = static_cast<int>(*exit_code);
  }
  return workload;
}

Status read_workloads(od::value value, std::vector<WorkloadStatus>& out) {
  od::array array;
  if (const auto code = value.get_array().get(array)) return fail(member_error("workloads", code));
  out.clear();
  for (auto element : array) {
    od::value item;
    if (const auto code = element.get(item)) return fail(malformed(simdjson::error_message(code)));
    GPURENT_TRY(workload, read_workload(item));
    out.push_back(std::move(workload));
  }
  return {};
}

struct ParserState {
  od::parser parser;
  std::string padded;  // the text, with simdjson's padding after it
};

}  // namespace

Result<NodeReport> read_node_report(std::string_view json,
                                    std::optional<std::string>* telemetry_text) {
  GPURENT_CHECK(check_json_depth(json));
  thread_local ParserState state;
  // simdjson reads up to SIMDJSON_PADDING bytes past the text, so it reads a padded copy.
  state.padded.reserve(json.size() + simdjson::SIMDJSON_PADDING);
  state.padded.assign(json);
  if (state.parser.capacity() < json.size() || state.parser.max_depth() != kMaxJsonDepth) {
    if (const auto code =
            state.parser.allocate(std::max(json.size(), size_t{4096}), kMaxJsonDepth)) {
      return fail(Error::internal(simdjson::error_message(code)));
    }
  }
  od::document document;
  if (const auto code =
          state.parser.iterate(state.padded.data(), state.padded.size(), state.padded.capacity())
              .get(document)) {
    return fail(malformed(simdjson::error_message(code)));
  }
  // The document's extent first (a walk over its structure, no values read), so that text after
  // the object is refused as parse_json_object refuses it. The walk ends at the next token, or
  // past the end of the text when there is none.
  std::string_view whole;
  if (const auto code = document.raw_json().get(whole)) {
    return fail(malformed(simdjson::error_message(code)));
  }
  const auto last = json.find_last_not_of(" \t\r\n");
  if (last == std::string_view::npos ||
      whole.data() + whole.size() <= state.padded.data() + last) {
    return fail(malformed("text after the JSON value"));
  }
  document.rewind();
  od::object object;
  if (const auto code = document.get_object().get(object)) {
    if (code == simdjson::INCORRECT_TYPE) {
      return fail(Error::invalid("malformed_json", "body must be a JSON object"));
    }
    return fail(malformed(simdjson::error_message(code)));
  }

  NodeReport report;
  bool has_generation = false, has_workloads = false;
  std::optional<std::string> telemetry;
  GPURENT_CHECK(for_each_member(object, [&](std::string_view key, od::value value) -> Status {
    if (key == "applied_generation") {
      has_generation = true;
      return read(value, key, report.applied_generation);
    }
    if (key == "workloads") {
      has_workloads = true;
      return read_workloads(value, report.workloads);
    }
    if (key == "node_api_address") return read(value, key, report.node_api_address);
    if (key == "node_api_secret") return read(value, key, report.node_api_secret);
    if (key == "container_runtime") return read(value, key, report.container_runtime);
    if (key == "sent_at_ms") return read(value, key, report.sent_at_ms);
    if (key == "telemetry") {
      od::json_type type;
      if (const auto code = value.type().get(type)) return fail(member_error(key, code));
      if (type != od::json_type::string && type != od::json_type::null) {
        return fail(Error::invalid("invalid_message", std::string(kTelemetryIsAFrame)));
      }
      return read(value, key, telemetry);
    }
    return {};
  }));
  if (!has_generation) return fail(missing("applied_generation"));
  if (!has_workloads) return fail(missing("workloads"));
  if (telemetry_text) {
    *telemetry_text = std::move(telemetry);
  } else if (telemetry) {
    GPURENT_TRY(batch, decode_telemetry_text(*telemetry));
    report.telemetry = std::move(batch);
  }
  return report;
}

}  // namespace gpurent::model
