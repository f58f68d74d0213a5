// A direct JSON writer whose output is byte for byte what nlohmann's dump() writes of the same
// value: keys in sorted order (a described type's table lists them so, common/field_table.h), no
// spaces, control characters as \u00xx. For the documents written on hot paths (the store's rows,
// the agent protocol's messages), where building nlohmann's tree first cost several times as much.
//
// Times are written as Unix milliseconds (the store's and the agent protocol's form). Strings are
// assumed valid UTF-8, as everything parsed from JSON is, except with Strings::kFromOutside (text
// from a node: a process's output), where each byte that starts no valid UTF-8 sequence is written
// as U+FFFD, as dump() with error_handler_t::replace does. A type of another shape writes itself:
// write_json(JsonWriter&, const T&), found by argument-dependent lookup.
#pragma once

#include <charconv>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/clock.h"
#include "common/field_table.h"
#include "common/json.h"

namespace gpurent {

// Whether every byte of `text` is part of a valid UTF-8 sequence; `text` with each byte that
// starts none replaced by U+FFFD.
bool is_valid_utf8(std::string_view text);
std::string replace_invalid_utf8(std::string_view text);

class JsonWriter {
 public:
  enum class Strings { kValidUtf8, kFromOutside };

  explicit JsonWriter(std::string& out, Strings strings = Strings::kValidUtf8)
      : out_(out), strings_(strings) {}

  void string(std::string_view text) {
    strings_ == Strings::kFromOutside ? replaced_string(text) : valid_string(text);
  }
  void number(int64_t value) {
    char digits[24];
    const auto written = std::to_chars(std::begin(digits), std::end(digits), value);
    out_.append(digits, written.ptr);
  }
  void boolean(bool value) { out_ += value ? "true" : "false"; }
  void null() { out_ += "null"; }

  // Opens an object; key() starts each member, end() closes it.
  void begin() {
    out_ += '{';
    first_ = true;
  }
  void key(std::string_view name) {
    if (!first_) out_ += ',';
    first_ = false;
    out_ += '"';
    out_ += name;
    out_ += "\":";
  }
  void end() {
    out_ += '}';
    first_ = false;
  }

  // Any value a field table may hold (common/field_table.h).
  template <class T>
  void value(const T& v);

  // A described object, member by member. intercept(name) is asked first for each member: true
  // when it has written the member itself (key and value) or left it out.
  template <schema::Described T>
  void object(const T& v) {
    object(v, [](std::string_view) { return false; });
  }
  template <schema::Described T, class Intercept>
  void object(const T& v, Intercept intercept);

 private:
  void valid_string(std::string_view text);
  void replaced_string(std::string_view text);

  std::string& out_;
  Strings strings_;
  bool first_ = true;
};

template <schema::Described T, class Intercept>
void JsonWriter::object(const T& v, Intercept intercept) {
  begin();
  auto write = [&](std::string_view name, const auto& member,
                   schema::Presence presence = schema::kRequired) {
    using schema::is_empty;  // or the member type's own, found by argument-dependent lookup
    if (intercept(name)) return;
    if (presence == schema::kOmitEmpty && is_empty(member)) return;
    key(name);
    value(member);
  };
  fields(write, v);
  end();
}

template <class T>
void JsonWriter::value(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    string(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    boolean(v);
  } else if constexpr (std::is_integral_v<T>) {
    number(v);
  } else if constexpr (std::is_same_v<T, Timestamp>) {
    number(to_unix_ms(v));
  } else if constexpr (std::is_enum_v<T>) {
    string(to_string(v));
  } else if constexpr (schema::is_optional_v<T>) {
    v ? value(*v) : null();
  } else if constexpr (schema::is_vector_v<T>) {
    out_ += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out_ += ',';
      value(v[i]);
    }
    out_ += ']';
  } else if constexpr (schema::is_map_v<T>) {
    out_ += '{';
    bool first = true;
    for (const auto& [name, item] : v) {
      if (!first) out_ += ',';
      first = false;
      string(name);
      out_ += ':';
      value(item);
    }
    out_ += '}';
  } else if constexpr (schema::Described<T>) {
    object(v);
  } else {
    write_json(*this, v);  // a type's own, found by argument-dependent lookup
  }
}

}  // namespace gpurent
