// A described type (common/field_table.h) to nlohmann's JSON tree and back, by its field table.
//
// Times are written as the form says: Unix milliseconds (the store and the agent protocol) or
// RFC 3339 text (what the REST API shows). Writing leaves out the kOmitEmpty members that are
// empty. read_json_object reads a document the platform wrote (a store row, a message): a
// kRequired member that is absent, a value of the wrong type or an unknown enum name throws
// (nlohmann's exceptions or std::invalid_argument; the callers turn them into an Error). Absent
// optional members keep the object's defaults; members the table does not list are ignored. Then,
// where the type has one, upgrade_older(json, object) (found by argument-dependent lookup) fills
// in what documents written by older versions lack.
//
// read_json_leniently reads an answer from a server of another version (the SDK): nothing throws;
// a member that is absent, null where it may not be, or of another type keeps its default, and an
// array item that cannot be read is left out.
#pragma once

#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "common/clock.h"
#include "common/field_table.h"
#include "common/json.h"

namespace gpurent::schema {

enum class TimeForm { kUnixMs, kRfc3339 };

template <TimeForm F, class T>
Json to_json_value(const T& value);

template <TimeForm F, Described T>
Json to_json_object(const T& object) {
  Json out = Json::object();
  auto write = [&out](std::string_view name, const auto& member, Presence presence = kRequired) {
    if (presence == kOmitEmpty && is_empty(member)) return;
    out[std::string(name)] = to_json_value<F>(member);
  };
  fields(write, object);
  return out;
}

template <TimeForm F, class T>
Json to_json_value(const T& value) {
  if constexpr (std::is_same_v<T, Timestamp>) {
    return F == TimeForm::kUnixMs ? Json(to_unix_ms(value)) : Json(format_rfc3339(value));
  } else if constexpr (std::is_enum_v<T>) {
    return Json(to_string(value));
  } else if constexpr (is_optional_v<T>) {
    return value ? to_json_value<F>(*value) : Json(nullptr);
  } else if constexpr (is_vector_v<T>) {
    Json out = Json::array();
    for (const auto& item : value) out.push_back(to_json_value<F>(item));
    return out;
  } else if constexpr (is_map_v<T>) {
    Json out = Json::object();
    for (const auto& [key, item] : value) out[key] = to_json_value<F>(item);
    return out;
  } else if constexpr (is_variant_v<T>) {
    return std::visit([](const auto& alternative) { return to_json_value<F>(alternative); }, value);
  } else if constexpr (Described<T>) {
    return to_json_object<F>(value);
  } else {
    return Json(value);  // a string, a number, a bool, or a type with its own to_json
  }
}

template <TimeForm F, class T>
void from_json_value(const Json& json, std::string_view name, T& out);

// Whether the JSON value is of T's shape: a string, a number, a bool, an array, an object.
template <class T>
bool has_shape_of(const Json& json) {
  if constexpr (std::is_same_v<T, std::string>) {
    return json.is_string();
  } else if constexpr (std::is_same_v<T, bool>) {
    return json.is_boolean();
  } else if constexpr (std::is_arithmetic_v<T>) {
    return json.is_number();
  } else if constexpr (is_vector_v<T>) {
    return json.is_array();
  } else {
    return json.is_object();
  }
}

// Reads the first alternative whose shape the value has; false when none has it.
template <TimeForm F, class... A>
bool read_variant(const Json& json, std::variant<A...>& out) {
  return (
      (has_shape_of<A>(json) && (from_json_value<F>(json, "", out.template emplace<A>()), true)) ||
      ...);
}

template <TimeForm F, Described T>
void read_json_object(const Json& json, T& object) {
  if (!json.is_object()) throw std::invalid_argument("not a JSON object");
  auto read = [&json](std::string_view name, auto& member, Presence presence = kRequired) {
    const auto it = json.find(name);
    if (it == json.end()) {
      if (presence == kRequired) {
        throw std::invalid_argument("member '" + std::string(name) + "' is missing");
      }
      return;
    }
    from_json_value<F>(*it, name, member);
  };
  fields(read, object);
  if constexpr (requires { upgrade_older(json, object); }) upgrade_older(json, object);
}

// An integer member: a JSON integer that fits I. nlohmann would convert a float (or an integer
// past uint64, which it parses as one) with a cast whose result is undefined, and narrow a wide
// integer silently.
template <class I>
I integer_member(const Json& json, std::string_view name) {
  const bool fits =
      json.is_number_unsigned()
          ? json.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<I>::max())
          : json.is_number_integer() && std::in_range<I>(json.get<int64_t>());
  if (!fits) {
    throw std::invalid_argument("member '" + std::string(name) + "' is no integer in range");
  }
  return json.is_number_unsigned() ? static_cast<I>(json.get<uint64_t>())
                                   : static_cast<I>(json.get<int64_t>());
}

template <TimeForm F, class T>
void from_json_value(const Json& json, std::string_view name, T& out) {
  if constexpr (std::is_same_v<T, Timestamp>) {
    if constexpr (F == TimeForm::kUnixMs) {
      out = from_unix_ms(integer_member<int64_t>(json, name));
    } else {
      const auto parsed = parse_rfc3339(json.get_ref<const std::string&>());
      if (!parsed) throw std::invalid_argument("member '" + std::string(name) + "' is no time");
      out = *parsed;
    }
  } else if constexpr (std::is_enum_v<T>) {
    const auto& text = json.get_ref<const std::string&>();
    if (!from_string(text, &out)) {
      throw std::invalid_argument("unknown " + std::string(name) + " " + text);
    }
  } else if constexpr (is_optional_v<T>) {
    if (json.is_null()) {
      out.reset();
    } else {
      from_json_value<F>(json, name, out.emplace());
    }
  } else if constexpr (is_vector_v<T>) {
    if (!json.is_array())
      throw std::invalid_argument("member '" + std::string(name) + "' is no array");
    out.clear();
    out.reserve(json.size());
    for (const auto& item : json) from_json_value<F>(item, name, out.emplace_back());
  } else if constexpr (is_map_v<T>) {
    if (!json.is_object())
      throw std::invalid_argument("member '" + std::string(name) + "' is no object");
    out.clear();
    for (const auto& [key, item] : json.items()) from_json_value<F>(item, name, out[key]);
  } else if constexpr (is_variant_v<T>) {
    if (!read_variant<F>(json, out)) {
      throw std::invalid_argument("member '" + std::string(name) + "' is of another type");
    }
  } else if constexpr (Described<T>) {
    read_json_object<F>(json, out);
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    out = integer_member<T>(json, name);
  } else {
    json.get_to(out);  // a string, a float, a bool, or a type with its own from_json
  }
}

template <TimeForm F, Described T>
void read_json_leniently(const Json& json, T& object);

// One member of read_json_leniently: true when it was read.
template <TimeForm F, class T>
bool read_json_value_leniently(const Json& json, T& out) {
  if constexpr (std::is_same_v<T, Timestamp>) {
    if constexpr (F == TimeForm::kUnixMs) {
      if (!json.is_number_integer()) return false;
      out = from_unix_ms(json.get<int64_t>());
    } else {
      const auto parsed =
          json.is_string() ? parse_rfc3339(json.get_ref<const std::string&>()) : std::nullopt;
      if (!parsed) return false;
      out = *parsed;
    }
    return true;
  } else if constexpr (std::is_enum_v<T>) {
    return json.is_string() && from_string(json.get_ref<const std::string&>(), &out);
  } else if constexpr (is_optional_v<T>) {
    if (json.is_null()) {
      out.reset();
      return true;
    }
    typename T::value_type value{};
    if (!read_json_value_leniently<F>(json, value)) return false;
    out = std::move(value);
    return true;
  } else if constexpr (is_vector_v<T>) {
    if (!json.is_array()) return false;
    out.clear();
    for (const auto& item : json) {
      if (!read_json_value_leniently<F>(item, out.emplace_back())) out.pop_back();
    }
    return true;
  } else if constexpr (is_map_v<T>) {
    if (!json.is_object()) return false;
    out.clear();
    for (const auto& [key, item] : json.items()) {
      typename T::mapped_type value{};
      if (read_json_value_leniently<F>(item, value)) out.emplace(key, std::move(value));
    }
    return true;
  } else if constexpr (is_variant_v<T>) {
    try {
      return read_variant<F>(json, out);
    } catch (const std::exception&) {
      return false;
    }
  } else if constexpr (Described<T>) {
    if (!json.is_object()) return false;
    read_json_leniently<F>(json, out);
    return true;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!json.is_boolean()) return false;
    out = json.get<bool>();
    return true;
  } else if constexpr (std::is_integral_v<T>) {
    if (!json.is_number_integer()) return false;
    out = json.get<T>();
    return true;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!json.is_number()) return false;
    out = json.get<T>();
    return true;
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!json.is_string()) return false;
    out = json.get<std::string>();
    return true;
  } else {
    try {
      json.get_to(out);  // a type with its own from_json
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }
}

template <TimeForm F, Described T>
void read_json_leniently(const Json& json, T& object) {
  auto read = [&json](std::string_view name, auto& member, Presence = kRequired) {
    const auto it = json.find(name);
    // A value it cannot read leaves the member as it was: each reader checks before it writes.
    if (it != json.end()) read_json_value_leniently<F>(*it, member);
  };
  fields(read, object);
}

}  // namespace gpurent::schema
