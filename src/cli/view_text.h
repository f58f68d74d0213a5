// The small pieces of text the table forms (views.cc, resource_views.cc) are made of: times,
// prices, lists. What a server of another version left out (a default member, an unset time)
// prints as "-" or "".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/json.h"
#include "common/money.h"

namespace gpurent::cli {

std::string dash(const std::string& value);
bool given(Timestamp t);
// "3m ago", "in 2h"; "-" when there is no time.
std::string when(Timestamp t, Timestamp now);
// The exact time and how long ago, for detail views ("" when there is none).
std::string when_exactly(Timestamp t, Timestamp now);
std::string when_exactly(const std::optional<Timestamp>& t, Timestamp now);
std::string text_of(const std::optional<std::string>& value);
template <class Number>
std::string text_of(const std::optional<Number>& value) {
  return value ? std::to_string(*value) : "";
}
std::string yes_no(bool value);
// A price per hour of `multiplier` GPUs, "-" for an unpriced GPU type.
std::string price(const std::optional<Micros>& per_gpu, std::string_view currency,
                  int64_t multiplier = 1);
std::string memory(int64_t memory_mb);
// "a, b, c".
std::string join(const std::vector<std::string>& items);
// "A=1, B=2".
std::string join_env(const std::map<std::string, std::string>& env);
// A member of JSON the API passes on untyped (a GPU's telemetry) as text: strings as they are,
// numbers and booleans spelled out, anything else "".
std::string field_text(const Json& object, std::string_view key);

}  // namespace gpurent::cli
