#include "model/json_reader.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/json.h"

namespace gpurent::model::json_reader {

Error malformed(std::string_view why) {
  return Error::invalid("malformed_json", fmt::format("body is not valid JSON: {}", why));
}

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

Error unknown_name(std::string_view member, std::string_view text) {
  return Error::invalid("invalid_message", fmt::format("unknown {} {}", member, text));
}

std::string Path::text() const {
  if (!parent) return std::string(name);
  std::string out = parent->text();
  if (!out.empty() && name != "[]") out += '.';
  out += name;
  return out;
}

Error malformed(simdjson::error_code code) { return malformed(simdjson::error_message(code)); }

Status Members::start(od::object object) {
  if (const auto code = object.begin().get(it_)) return fail(malformed(code));
  if (const auto code = object.end().get(end_)) return fail(malformed(code));
  return load();
}

namespace {

struct ParserState {
  od::parser parser;
  std::string padded;  // the text, with simdjson's padding after it
  od::document document;
};

}  // namespace

Result<od::object> open_object(std::string_view json) {
  GPURENT_CHECK(check_json_depth(json));
  // NOLINTNEXTLINE(misc-use-internal-linkage): a function's own, not a namespace-scope variable
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
  od::document& document = state.document;
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
  if (last == std::string_view::npos || whole.data() + whole.size() <= state.padded.data() + last) {
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
  return object;
}

}  // namespace gpurent::model::json_reader
