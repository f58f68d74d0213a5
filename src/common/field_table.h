// One description per wire or store type, from which every JSON encoding of it follows: its field
// table. The generic encoders walk the table: common/json_fields.h (nlohmann's tree, both ways),
// common/json_writer.h (the direct writer of the hot paths), model/json_reader.h (the simdjson
// reader of the agent protocol), and the OpenAPI check (api/openapi_schema_test.cc) compares the
// tables of the API's types with docs/openapi.json.
//
// A type's table is a function named `fields`, found by argument-dependent lookup, that calls the
// visitor once per member with its JSON name:
//
//   template <class V, schema::Of<Volume> S>
//   void fields(V& visit, S& x) {
//     visit("created_at", x.created_at);
//     visit("deleted_at", x.deleted_at, schema::kOptional);
//     ...
//   }
//
// S is `Volume` for the readers and `const Volume` for the writers. Members are listed in sorted
// order of their names: the direct writer writes them in table order, and what it writes must be
// byte for byte what nlohmann's dump() writes (its objects are sorted maps). table_is_sorted()
// checks it (each type's unit test does).
//
// A member's value is a string, an integer, a bool, a Timestamp, an enum (written by to_string,
// read by from_string, both found by argument-dependent lookup), a type with a table of its own,
// or an optional, vector, string-keyed map or variant of those. (A type of another shape brings
// its own to_json and from_json, write_json for the direct writer, and json_type for the OpenAPI
// check.)
#pragma once

#include <concepts>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace gpurent::schema {

enum class Presence {
  kRequired,   // always written; a reader refuses a document without it
  kOptional,   // always written; absent from a document (an older writer's), the member keeps its
               // default
  kOmitEmpty,  // left out while empty (is_empty below, or the type's own is_empty found by
               // argument-dependent lookup); absent: the default
};
inline constexpr Presence kRequired = Presence::kRequired;
inline constexpr Presence kOptional = Presence::kOptional;
inline constexpr Presence kOmitEmpty = Presence::kOmitEmpty;

// S is T, const or not: the second parameter of a table.
template <class S, class T>
concept Of = std::same_as<std::remove_const_t<S>, T>;

// A visitor that does nothing: what Described asks a table to accept.
struct NoVisit {
  template <class M>
  void operator()(std::string_view, M&, Presence = kRequired) {}
};

template <class T>
concept Described = requires(NoVisit& visit, T& x) {
  fields(visit, x);
};

// The shapes a member's value takes, for the encoders' dispatch.
template <class T>
inline constexpr bool is_optional_v = false;
template <class T>
inline constexpr bool is_optional_v<std::optional<T>> = true;
template <class T>
inline constexpr bool is_vector_v = false;
template <class T>
inline constexpr bool is_vector_v<std::vector<T>> = true;
template <class T>
inline constexpr bool is_map_v = false;
template <class T>
inline constexpr bool is_map_v<std::map<std::string, T>> = true;
// One of two JSON shapes (a command: a shell line or an argv); read as the first that fits.
template <class T>
inline constexpr bool is_variant_v = false;
template <class... T>
inline constexpr bool is_variant_v<std::variant<T...>> = true;

// What kOmitEmpty leaves out: nullopt, false, an empty string or container. A number, a time, an
// enum or an object is never empty.
template <class T>
bool is_empty(const T& value) {
  if constexpr (is_optional_v<T>) {
    return !value.has_value();
  } else if constexpr (std::is_same_v<T, bool>) {
    return !value;
  } else if constexpr (requires { value.empty(); }) {
    return value.empty();
  } else {
    return false;
  }
}

// Whether T's table lists its names in sorted order (see above).
template <Described T>
bool table_is_sorted() {
  std::string_view previous;
  bool sorted = true;
  auto check = [&](std::string_view name, const auto&, Presence = kRequired) {
    sorted = sorted && previous < name;
    previous = name;
  };
  const T probe{};
  fields(check, probe);
  return sorted;
}

}  // namespace gpurent::schema
