#include "model/scopes.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpurent::model {

const std::array<std::string_view, kScopeAreaCount>& scope_area_names() {
  static constexpr std::array<std::string_view, kScopeAreaCount> kNames{
      "instances", "jobs",  "reservations", "volumes",    "templates", "uploads", "billing",
      "keys",      "audit", "events",       "monitoring", "prices",    "tenants", "nodes"};
  return kNames;
}

std::string_view to_string(ScopeArea area) { return scope_area_names()[static_cast<size_t>(area)]; }

Result<ScopeSet> ScopeSet::parse(const std::vector<std::string>& scopes) {
  if (scopes.empty()) return ScopeSet{};
  ScopeSet set;
  set.read_ = 0;
  set.write_ = 0;
  const auto& names = scope_area_names();
  for (const std::string& scope : scopes) {
    const size_t colon = scope.find(':');
    const std::string_view area = std::string_view(scope).substr(0, colon);
    const std::string_view access =
        colon == std::string::npos ? "*" : std::string_view(scope).substr(colon + 1);
    uint32_t areas = 0;
    if (area == "*") {
      areas = kAll;
    } else if (const auto it = std::find(names.begin(), names.end(), area); it != names.end()) {
      areas = 1U << static_cast<unsigned>(it - names.begin());
    }
    const bool writes = access == "write" || access == "*";
    if (areas == 0 || (!writes && access != "read") ||
        (colon == std::string::npos && area != "*")) {
      return fail(Error::invalid(
          "invalid_scope",
          fmt::format("unknown scope '{}': scopes are AREA:read, AREA:write, AREA:*, *:read or *, "
                      "AREA one of {}",
                      scope, fmt::join(names, ", "))));
    }
    set.read_ |= areas;
    if (writes) set.write_ |= areas;
  }
  return set;
}

std::vector<std::string> ScopeSet::names() const {
  if (everything()) return {"*"};
  if (read_ == kAll && write_ == 0) return {"*:read"};
  std::vector<std::string> out;
  const auto& names = scope_area_names();
  for (size_t i = 0; i < kScopeAreaCount; ++i) {
    const uint32_t bit = 1U << i;
    if ((write_ & bit) != 0) {
      out.push_back(fmt::format("{}:write", names[i]));
    } else if ((read_ & bit) != 0) {
      out.push_back(fmt::format("{}:read", names[i]));
    }
  }
  return out;
}

}  // namespace gpurent::model
