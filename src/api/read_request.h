// A request body read into its typed struct (src/api/) by the struct's field table: the server's
// side of the API. Shapes only: each member's JSON type; what the values mean (ranges, names,
// combinations, what depends on state) is the caller's to check (server/request_bodies.h).
//
// Errors, as values, naming the member at fault:
//   - "unknown_field": a member the table does not list (a misspelt member must not be silently
//     ignored);
//   - "invalid_field": a value of the wrong type (messages as common/json.h's readers), a
//     kRequired member absent or null, an enum value that names none of the enum's values (or
//     what on_unknown_name says instead).
// Null counts as absent, for every member.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "common/clock.h"
#include "common/field_table.h"
#include "common/json.h"
#include "common/result.h"

namespace gpurent::api {

// The error for an enum member whose text names none of its values; `names` lists them.
using UnknownName =
    std::function<Error(std::string_view member, std::string_view text, std::string_view names)>;
Error unknown_name(std::string_view member, std::string_view text, std::string_view names);

namespace read_request_detail {

Status refuse_unknown_members(const Json& body, const std::vector<std::string_view>& known);

// "a, b or c": the names of E's values, for errors.
template <class E>
std::string names_of() {
  std::string names;
  for (int i = 0;; ++i) {
    const std::string_view name = to_string(static_cast<E>(i));
    if (name == "unknown") break;
    if (!names.empty()) names += ", ";
    names += name;
  }
  return names;
}

template <class T>
Status read_value(const Json& value, std::string_view member, T& out, const UnknownName& unknown);

template <schema::Described T>
Status read_object(const Json& body, T& out, const UnknownName& unknown) {
  std::vector<std::string_view> known;
  auto name_of = [&](std::string_view name, const auto&, schema::Presence = schema::kRequired) {
    known.push_back(name);
  };
  fields(name_of, out);
  GPURENT_CHECK(refuse_unknown_members(body, known));
  Status status;
  auto read = [&](std::string_view name, auto& member,
                  schema::Presence presence = schema::kRequired) {
    if (!status) return;
    const auto it = body.find(name);
    if (it == body.end() || it->is_null()) {
      if (presence == schema::kRequired) status = fail(invalid_field(name, "is required"));
      return;
    }
    status = read_value(*it, name, member, unknown);
  };
  fields(read, out);
  return status;
}

template <class T>
Status read_value(const Json& value, std::string_view member, T& out, const UnknownName& unknown) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (!value.is_string()) return fail(invalid_field(member, "must be a string"));
    out = value.get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!value.is_boolean()) return fail(invalid_field(member, "must be true or false"));
    out = value.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!value.is_number_integer()) return fail(invalid_field(member, "must be an integer"));
    if (value.is_number_unsigned() ? value.get<uint64_t>() > uint64_t{std::numeric_limits<T>::max()}
                                   : value.get<int64_t>() < std::numeric_limits<T>::min() ||
                                         value.get<int64_t>() > std::numeric_limits<T>::max()) {
      return fail(invalid_field(member, "is out of range"));
    }
    out = value.get<T>();
  } else if constexpr (std::is_enum_v<T>) {
    if (!value.is_string()) return fail(invalid_field(member, "must be a string"));
    const auto& text = value.get_ref<const std::string&>();
    if (!from_string(text, &out)) return fail(unknown(member, text, names_of<T>()));
  } else if constexpr (schema::is_optional_v<T>) {
    return read_value(value, member, out.emplace(), unknown);
  } else if constexpr (std::is_same_v<T, Timestamp>) {
    const auto parsed =
        value.is_string() ? parse_rfc3339(value.get_ref<const std::string&>()) : std::nullopt;
    if (!parsed) return fail(invalid_field(member, "must be an RFC 3339 time"));
    out = *parsed;
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    if (!value.is_array()) return fail(invalid_field(member, "must be an array of strings"));
    out.clear();
    for (const Json& item : value) {
      if (!item.is_string()) return fail(invalid_field(member, "entries must be strings"));
      out.push_back(item.get<std::string>());
    }
  } else if constexpr (schema::is_vector_v<T>) {
    if (!value.is_array()) return fail(invalid_field(member, "must be an array"));
    out.clear();
    for (const Json& item : value) {
      GPURENT_CHECK(read_value(item, member, out.emplace_back(), unknown));
    }
  } else if constexpr (schema::is_map_v<T>) {
    if (!value.is_object()) return fail(invalid_field(member, "must be an object"));
    out.clear();
    for (const auto& [key, item] : value.items()) {
      GPURENT_CHECK(read_value(item, member, out[key], unknown));
    }
  } else if constexpr (std::is_same_v<T, std::variant<std::string, std::vector<std::string>>>) {
    if (value.is_string()) return read_value(value, member, out.template emplace<0>(), unknown);
    if (!value.is_array()) {
      return fail(invalid_field(member, "must be a non-empty array of strings or a string"));
    }
    return read_value(value, member, out.template emplace<1>(), unknown);
  } else {
    static_assert(schema::Described<T>);
    if (!value.is_object()) return fail(invalid_field(member, "must be an object"));
    return read_object(value, out, unknown);
  }
  return {};
}

}  // namespace read_request_detail

template <schema::Described T>
Result<T> read_request(const Json& body, const UnknownName& on_unknown_name = unknown_name) {
  T out{};
  GPURENT_CHECK(read_request_detail::read_object(body, out, on_unknown_name));
  return out;
}

}  // namespace gpurent::api
