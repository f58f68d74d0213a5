// simdjson On-Demand readers of described types (common/field_table.h), for the agent protocol's
// most frequent messages (node_report_json.h: a node's report, read by the server;
// desired_state_json.h: a node's desired state, read by the agent). read_object walks the
// message's text once and fills the struct by its field table, without a JSON tree: members it
// does not list are skipped, a member given twice counts as its last value, a kRequired member
// that is absent is refused. Internal to the model library.
//
// Errors, as the readers document them: "malformed_json" when the text is not one JSON object
// (or is nested deeper than kMaxJsonDepth, or has text after the object), "invalid_message" when
// a member is missing, of the wrong type or out of range; the message names the member.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/clock.h"
#include "common/field_table.h"
#include "common/result.h"

namespace gpurent::model::json_reader {

namespace od = simdjson::ondemand;

// Where a member is, for errors: "workloads[].job.id". Built only when an error names it.
struct Path {
  const Path* parent = nullptr;
  std::string_view name;  // a member's name, or "[]" for an array's items; "" for the message
  std::string text() const;
};

Error malformed(std::string_view why);
Error malformed(simdjson::error_code code);
// A member that could not be read: a type or range error is the message's fault, anything else
// (an unclosed string, a stray character) the JSON's.
Error member_error(std::string_view member, simdjson::error_code code);
Error missing(std::string_view member);
// An enum's value that names none of its values: "unknown phase exploded".
Error unknown_name(std::string_view member, std::string_view text);

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

// Calls on_item(value) for each element of the array `value`.
template <class OnItem>
Status for_each_item(od::value value, const Path& path, OnItem on_item) {
  od::array array;
  if (const auto code = value.get_array().get(array)) return fail(member_error(path.text(), code));
  for (auto element : array) {
    od::value item;
    if (const auto code = element.get(item)) return fail(malformed(simdjson::error_message(code)));
    GPURENT_CHECK(on_item(item));
  }
  return {};
}

template <class T>
Status read(od::value value, const Path& path, T& out);

// No member read by the caller: read_object's default.
struct NoIntercept {
  std::optional<Status> operator()(std::string_view, od::value) const { return std::nullopt; }
};

// The members of an object, one at a time: read_object's cursor.
class Members {
 public:
  // At the first member (or done). Errors as for_each_member's.
  Status start(od::object object);
  bool done() const { return done_; }
  std::string_view key() const { return key_; }
  od::value& value() { return value_; }
  Status next() {
    ++it_;
    return load();
  }

 private:
  Status load() {
    done_ = !(it_ != end_);
    if (done_) return {};
    auto field = *it_;
    if (const auto code = field.unescaped_key().get(key_)) return fail(malformed(code));
    if (const auto code = field.value().get(value_)) return fail(malformed(code));
    return {};
  }

  od::object_iterator it_;
  od::object_iterator end_;
  std::string_view key_;
  od::value value_;
  bool done_ = true;
};

// Fills `out` from the members of `object` by T's table. intercept(key, value) is asked first for
// each member: a Status when it has read the member itself.
//
// The writers list members in the table's order, so the table and the members are walked side by
// side and a member costs a comparison or two. A member out of that order (a document written by
// hand, a member given twice, an unknown one) is looked up in the table.
template <schema::Described T, class Intercept = NoIntercept>
Status read_object(od::object object, const Path& path, T& out, Intercept intercept = {}) {
  uint64_t seen = 0;  // bit i: the table's i-th member was there
  Members members;
  GPURENT_CHECK(members.start(object));
  // Reads the current member, wherever it is in the table.
  auto look_up = [&]() -> Status {
    if (std::optional<Status> handled = intercept(members.key(), members.value())) {
      return std::move(*handled);
    }
    Status status;
    int index = 0;
    bool found = false;
    auto match = [&](std::string_view name, auto& member, schema::Presence = schema::kRequired) {
      if (!found && name == members.key()) {
        found = true;
        seen |= uint64_t{1} << index;
        if (Status read_one = read(members.value(), Path{&path, name}, member); !read_one) {
          status = std::move(read_one);
        }
      }
      ++index;
    };
    fields(match, out);
    return status;
  };
  Status status;  // the first error; assigned only then, as success is the common case
  const auto keep_error = [&status](Status result) {
    if (!result) status = std::move(result);
  };
  int index = 0;
  auto walk = [&](std::string_view name, auto& member, schema::Presence = schema::kRequired) {
    while (status && !members.done()) {
      if (members.key() == name) {
        if (std::optional<Status> handled = intercept(members.key(), members.value())) {
          keep_error(std::move(*handled));
        } else {
          seen |= uint64_t{1} << index;
          keep_error(read(members.value(), Path{&path, name}, member));
        }
        if (status) keep_error(members.next());
        break;
      }
      if (!(members.key() < name)) break;  // `name` is absent, or later in the document
      keep_error(look_up());
      if (status) keep_error(members.next());
    }
    ++index;
  };
  fields(walk, out);
  while (status && !members.done()) {
    keep_error(look_up());
    if (status) keep_error(members.next());
  }
  GPURENT_CHECK(status);
  Status missing_member;
  index = 0;
  auto check = [&](std::string_view name, auto&, schema::Presence presence = schema::kRequired) {
    if (presence == schema::kRequired && !(seen >> index & 1) && missing_member) {
      missing_member = fail(missing(Path{&path, name}.text()));
    }
    ++index;
  };
  fields(check, out);
  return missing_member;
}

// The value at `path` as T: a string, an integer (in T's range), a bool, a time (Unix ms), an enum
// (by from_string),
// a described type, or an optional (null: nullopt), vector or string-keyed map of those; another
// type by its own read_json(value, path, out), found by argument-dependent lookup.
template <class T>
Status read(od::value value, const Path& path, T& out) {
  if constexpr (std::is_same_v<T, std::string>) {
    std::string_view text;
    if (const auto code = value.get_string().get(text))
      return fail(member_error(path.text(), code));
    out.assign(text);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (const auto code = value.get_bool().get(out)) return fail(member_error(path.text(), code));
  } else if constexpr (std::is_integral_v<T>) {
    int64_t wide = 0;
    if (const auto code = value.get_int64().get(wide)) return fail(member_error(path.text(), code));
    if (wide < std::numeric_limits<T>::min() || wide > std::numeric_limits<T>::max()) {
      return fail(member_error(path.text(), simdjson::NUMBER_OUT_OF_RANGE));
    }
    out = static_cast<T>(wide);
  } else if constexpr (std::is_same_v<T, Timestamp>) {
    int64_t unix_ms = 0;
    if (const auto code = value.get_int64().get(unix_ms)) {
      return fail(member_error(path.text(), code));
    }
    out = from_unix_ms(unix_ms);
  } else if constexpr (std::is_enum_v<T>) {
    std::string_view text;
    if (const auto code = value.get_string().get(text))
      return fail(member_error(path.text(), code));
    if (!from_string(text, &out)) return fail(unknown_name(path.name, text));
  } else if constexpr (schema::is_optional_v<T>) {
    bool null = false;
    if (const auto code = value.is_null().get(null)) return fail(member_error(path.text(), code));
    if (null) {
      out.reset();
      return {};
    }
    return read(value, path, out.emplace());
  } else if constexpr (schema::is_vector_v<T>) {
    out.clear();
    const Path items{&path, "[]"};
    return for_each_item(value, path, [&](od::value item) -> Status {
      return read(item, items, out.emplace_back());
    });
  } else if constexpr (schema::is_map_v<T>) {
    od::object object;
    if (const auto code = value.get_object().get(object)) {
      return fail(member_error(path.text(), code));
    }
    out.clear();
    return for_each_member(object, [&](std::string_view key, od::value item) -> Status {
      return read(item, path, out[std::string(key)]);
    });
  } else if constexpr (schema::Described<T>) {
    od::object object;
    if (const auto code = value.get_object().get(object)) {
      return fail(member_error(path.text(), code));
    }
    return read_object(object, path, out);
  } else {
    return read_json(value, path, out);
  }
  return {};
}

}  // namespace gpurent::model::json_reader
