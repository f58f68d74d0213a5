#include "cli/view_text.h"

#include <fmt/format.h>

#include "cli/output.h"

namespace gpurent::cli {

std::string dash(const std::string& value) { return value.empty() ? "-" : value; }

bool given(Timestamp t) { return t != Timestamp{}; }

std::string when(Timestamp t, Timestamp now) { return given(t) ? format_relative(t, now) : "-"; }

std::string when_exactly(Timestamp t, Timestamp now) {
  return given(t) ? fmt::format("{} ({})", format_rfc3339(t), format_relative(t, now)) : "";
}

std::string when_exactly(const std::optional<Timestamp>& t, Timestamp now) {
  return t ? when_exactly(*t, now) : "";
}

std::string text_of(const std::optional<std::string>& value) { return value.value_or(""); }

std::string yes_no(bool value) { return value ? "yes" : "no"; }

std::string price(const std::optional<Micros>& per_gpu, std::string_view currency,
                  int64_t multiplier) {
  if (!per_gpu || *per_gpu == 0) return "-";
  return format_price_per_hour(*per_gpu * multiplier, currency);
}

std::string memory(int64_t memory_mb) { return memory_mb > 0 ? format_memory_mb(memory_mb) : "-"; }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string join_env(const std::map<std::string, std::string>& env) {
  std::string out;
  for (const auto& [name, value] : env) {
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", name, value);
  }
  return out;
}

std::string field_text(const Json& object, std::string_view key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  if (it == object.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  if (it->is_boolean()) return it->get<bool>() ? "yes" : "no";
  return "";
}

}  // namespace gpurent::cli
