// simdjson On-Demand helpers shared by the readers of the agent protocol's most frequent messages
// (node_report_json.h: a node's report, read by the server; desired_state_json.h: a node's desired
// state, read by the agent). Each reader walks its message's text once and fills its struct
// directly, without a JSON tree. Internal to the model library.
//
// Errors, as the readers document them: "malformed_json" when the text is not one JSON object
// (or is nested deeper than kMaxJsonDepth, or has text after the object), "invalid_message" when
// a member is missing, of the wrong type or out of range; the message names the member.
#pragma once

#include <simdjson.h>

#include <array>
#include <climits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/result.h"

namespace gpurent::model::json_reader {

namespace od = simdjson::ondemand;

Error malformed(std::string_view why);
// A member that could not be read: a type or range error is the message's fault, anything else
// (an unclosed string, a stray character) the JSON's.
Error member_error(std::string_view member, simdjson::error_code code);
Error missing(std::string_view member);

// `json` as one JSON object with nothing after it, read from this thread's parser. The object is
// valid until the next open_object() on the same thread.
Result<od::object> open_object(std::string_view json);

// Calls on_member(key, value) for each member of `object`, in order.
template <class OnMember>
Status for_each_member(od::object object, OnMember on_member) {
  for (auto field : object) {
    std::string_view key;
    if (const auto code = field.unescaped_key().get(key)) {
      return fail(malformed(simdjson::error_message(code)));
    }
    od::value value;
    if (const auto code = field.value().get(value)) {
      return fail(malformed(simdjson::error_message(code)));
    }
    GPURENT_CHECK(on_member(key, value));
  }
  return {};
}

// Calls on_member(key, value) for each member of `object` (the member `member`; "" for the
// message itself), then fails naming the first key of `required` it did not have.
template <size_t N, class OnMember>
Status read_members(od::object object, std::string_view member,
                    const std::array<std::string_view, N>& required, OnMember on_member) {
  std::array<bool, N> seen{};
  GPURENT_CHECK(for_each_member(object, [&](std::string_view key, od::value value) -> Status {
    for (size_t i = 0; i < N; ++i) seen[i] |= key == required[i];
    return on_member(key, value);
  }));
  for (size_t i = 0; i < N; ++i) {
    if (seen[i]) continue;
    return fail(missing(member.empty() ? std::string(required[i])
                                       : std::string(member) + "." + std::string(required[i])));
  }
  return {};
}

// read_members() of the value `value`, which must be an object.
template <size_t N, class OnMember>
Status read_members(od::value value, std::string_view member,
                    const std::array<std::string_view, N>& required, OnMember on_member) {
  od::object object;
  if (const auto code = value.get_object().get(object)) return fail(member_error(member, code));
  return read_members(object, member, required, std::move(on_member));
}

// Calls on_item(value) for each element of the array `value` (the member `member`).
template <class OnItem>
Status for_each_item(od::value value, std::string_view member, OnItem on_item) {
  od::array array;
  if (const auto code = value.get_array().get(array)) return fail(member_error(member, code));
  for (auto element : array) {
    od::value item;
    if (const auto code = element.get(item)) return fail(malformed(simdjson::error_message(code)));
    GPURENT_CHECK(on_item(item));
  }
  return {};
}

// The value of `member` as T: a string, an int64_t, an int (in range), a bool, a list of strings,
// an object of strings; null reads as nullopt where T is optional.
template <class T>
Status read(od::value value, std::string_view member, T& out) {
  if constexpr (std::is_same_v<T, std::string>) {
    std::string_view text;
    if (const auto code = value.get_string().get(text)) return fail(member_error(member, code));
    out.assign(text);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    if (const auto code = value.get_int64().get(out)) return fail(member_error(member, code));
  } else if constexpr (std::is_same_v<T, int>) {
    int64_t wide = 0;
    if (const auto code = value.get_int64().get(wide)) return fail(member_error(member, code));
    if (wide < INT_MIN || wide > INT_MAX) {
      return fail(member_error(member, simdjson::NUMBER_OUT_OF_RANGE));
    }
    out = static_cast<int>(wide);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (const auto code = value.get_bool().get(out)) return fail(member_error(member, code));
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    out.clear();
    return for_each_item(value, member, [&](od::value item) -> Status {
      return read(item, member, out.emplace_back());
    });
  } else {
    static_assert(std::is_same_v<T, std::map<std::string, std::string>>);
    od::object object;
    if (const auto code = value.get_object().get(object)) return fail(member_error(member, code));
    out.clear();
    return for_each_member(object, [&](std::string_view key, od::value item) -> Status {
      return read(item, member, out[std::string(key)]);
    });
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

}  // namespace gpurent::model::json_reader
