// JSON at the edges: parsing request bodies without exceptions and reading validated fields.
//
// Every reader returns an Error with code "invalid_field" naming the field, so a client learns
// exactly which part of its request was wrong. Nesting deeper than kMaxJsonDepth is refused.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace gpurent {

using Json = nlohmann::json;

inline constexpr int kMaxJsonDepth = 32;

// Parses text that must be one JSON object.
Result<Json> parse_json_object(std::string_view text);
// Code "malformed_json" when objects and arrays nest deeper than kMaxJsonDepth in the text (a scan
// before parsing: only meaningful for text a parser then reads as JSON).
Status check_json_depth(std::string_view text);

Result<std::optional<std::string>> optional_string(const Json& object, std::string_view key,
                                                   size_t max_length);
Result<std::string> required_string(const Json& object, std::string_view key, size_t max_length);
Result<std::optional<int64_t>> optional_int(const Json& object, std::string_view key, int64_t min,
                                            int64_t max);
Result<int64_t> required_int(const Json& object, std::string_view key, int64_t min, int64_t max);
Result<std::optional<bool>> optional_bool(const Json& object, std::string_view key);
// A map of string to string (environment variables, labels).
Result<std::map<std::string, std::string>> optional_string_map(const Json& object,
                                                               std::string_view key,
                                                               size_t max_entries,
                                                               size_t max_length);
Result<std::vector<std::string>> optional_string_list(const Json& object, std::string_view key,
                                                      size_t max_entries, size_t max_length);

Error invalid_field(std::string_view key, std::string_view why);

}  // namespace gpurent
