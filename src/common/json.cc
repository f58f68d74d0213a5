#include "common/json.h"

#include <algorithm>

namespace gpurent {

Error invalid_field(std::string_view key, std::string_view why) {
  return Error::invalid("invalid_field", fmt::format("field '{}' {}", key, why));
}

namespace {

// The deepest nesting of objects and arrays in the text (brackets inside strings do not count);
// only meaningful for valid JSON, which the parser checks afterwards.
int nesting_depth(std::string_view text) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

Status check_json_depth(std::string_view text) {
  if (nesting_depth(text) > kMaxJsonDepth) {
    return fail(Error::invalid("malformed_json",
                               fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth)));
  }
  return {};
}

Result<Json> parse_json_object(std::string_view text) {
  // Checked by a scan before parsing rather than by a parser callback: the callback, called for
  // every value, made parsing (agents' reports on the server's I/O thread) about a fifth slower.
  GPURENT_CHECK(check_json_depth(text));
  Json value = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return fail(Error::invalid("malformed_json", "body is not valid JSON"));
  if (!value.is_object())
    return fail(Error::invalid("malformed_json", "body must be a JSON object"));
  return value;
}

Result<std::optional<std::string>> optional_string(const Json& object, std::string_view key,
                                                   size_t max_length) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) return fail(invalid_field(key, "must be a string"));
  const auto& value = it->get_ref<const std::string&>();
  if (value.size() > max_length) {
    return fail(invalid_field(key, fmt::format("is longer than {} characters", max_length)));
  }
  return std::optional<std::string>(value);
}

Result<std::string> required_string(const Json& object, std::string_view key, size_t max_length) {
  GPURENT_TRY(value, optional_string(object, key, max_length));
  if (!value || value->empty()) return fail(invalid_field(key, "is required"));
  return *value;
}

Result<std::optional<int64_t>> optional_int(const Json& object, std::string_view key, int64_t min,
                                            int64_t max) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<int64_t>();
  if (!it->is_number_integer()) return fail(invalid_field(key, "must be an integer"));
  // Unsigned values beyond int64 are out of range; compare before converting.
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(max)) {
    return fail(invalid_field(key, fmt::format("must be between {} and {}", min, max)));
  }
  const int64_t value = it->get<int64_t>();
  if (value < min || value > max) {
    return fail(invalid_field(key, fmt::format("must be between {} and {}", min, max)));
  }
  return std::optional<int64_t>(value);
}

Result<int64_t> required_int(const Json& object, std::string_view key, int64_t min, int64_t max) {
  GPURENT_TRY(value, optional_int(object, key, min, max));
  if (!value) return fail(invalid_field(key, "is required"));
  return *value;
}

Result<std::optional<bool>> optional_bool(const Json& object, std::string_view key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<bool>();
  if (!it->is_boolean()) return fail(invalid_field(key, "must be true or false"));
  return std::optional<bool>(it->get<bool>());
}

Result<std::map<std::string, std::string>> optional_string_map(const Json& object,
                                                               std::string_view key,
                                                               size_t max_entries,
                                                               size_t max_length) {
  std::map<std::string, std::string> out;
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return out;
  if (!it->is_object()) return fail(invalid_field(key, "must be an object of strings"));
  if (it->size() > max_entries) {
    return fail(invalid_field(key, fmt::format("has more than {} entries", max_entries)));
  }
  for (const auto& [name, value] : it->items()) {
    if (!value.is_string()) return fail(invalid_field(key, "must map names to strings"));
    if (name.empty() || name.size() > max_length ||
        value.get_ref<const std::string&>().size() > max_length) {
      return fail(invalid_field(key, fmt::format("entries must be 1..{} characters", max_length)));
    }
    out.emplace(name, value.get<std::string>());
  }
  return out;
}

Result<std::vector<std::string>> optional_string_list(const Json& object, std::string_view key,
                                                      size_t max_entries, size_t max_length) {
  std::vector<std::string> out;
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return out;
  if (!it->is_array()) return fail(invalid_field(key, "must be an array of strings"));
  if (it->size() > max_entries) {
    return fail(invalid_field(key, fmt::format("has more than {} entries", max_entries)));
  }
  for (const auto& value : *it) {
    if (!value.is_string() || value.get_ref<const std::string&>().size() > max_length) {
      return fail(invalid_field(
          key, fmt::format("entries must be strings of at most {} characters", max_length)));
    }
    out.push_back(value.get<std::string>());
  }
  return out;
}

}  // namespace gpurent
