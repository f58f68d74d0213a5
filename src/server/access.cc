#include "server/access.h"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace gpurent::server {

namespace {

using model::ScopeArea;

// Each area's routes are these paths and the paths below them.
constexpr std::array<std::pair<std::string_view, ScopeArea>, 20> kAreaPrefixes{{
    {"/v1/instances", ScopeArea::kInstances},
    {"/v1/jobs", ScopeArea::kJobs},
    {"/v1/reservations", ScopeArea::kReservations},
    {"/v1/volumes", ScopeArea::kVolumes},
    {"/v1/templates", ScopeArea::kTemplates},
    {"/v1/uploads", ScopeArea::kUploads},
    {"/v1/billing", ScopeArea::kBilling},
    {"/v1/packages", ScopeArea::kBilling},
    {"/v1/estimate", ScopeArea::kBilling},
    {"/v1/api-keys", ScopeArea::kKeys},
    {"/v1/join-tokens", ScopeArea::kKeys},
    {"/v1/audit", ScopeArea::kAudit},
    {"/v1/events", ScopeArea::kEvents},
    {"/v1/metrics", ScopeArea::kMonitoring},
    {"/v1/alerts", ScopeArea::kMonitoring},
    {"/v1/prices", ScopeArea::kPrices},
    {"/v1/spot-prices", ScopeArea::kPrices},
    {"/v1/tenants", ScopeArea::kTenants},
    {"/v1/nodes", ScopeArea::kNodes},
    {"/v1/training-benchmarks", ScopeArea::kNodes},
}};

// Routes every valid key reaches: the caller itself, the public catalog, the console session
// (signing out must work for any key).
constexpr std::array<std::string_view, 4> kOpenRoutes{"/v1/whoami", "/v1/gpu-types", "/v1/offers",
                                                      "/v1/session"};

// POSTs that compute an answer and change nothing.
constexpr std::array<std::string_view, 2> kReadingPosts{"/v1/estimate", "/v1/reservations/quote"};

bool within(std::string_view pattern, std::string_view prefix) {
  return pattern.starts_with(prefix) &&
         (pattern.size() == prefix.size() || pattern[prefix.size()] == '/');
}

Error forbidden(std::string message) {
  return {ErrorKind::kPermissionDenied, "forbidden", std::move(message)};
}

}  // namespace

std::optional<RouteAccess> route_access(std::string_view method, std::string_view pattern) {
  bool reads = method == "GET" || method == "HEAD";
  for (const std::string_view open : kOpenRoutes) {
    // Signing out ends the caller's own session, which any key may do.
    if (pattern == open) return RouteAccess{.audited = !reads};
  }
  for (const std::string_view post : kReadingPosts) reads = reads || pattern == post;
  const bool creates = method == "POST" && !reads && pattern.find('{') == std::string_view::npos;
  for (const auto& [prefix, area] : kAreaPrefixes) {
    if (within(pattern, prefix)) {
      return RouteAccess{.area = area, .writes = !reads, .creates = creates, .audited = !reads};
    }
  }
  return std::nullopt;
}

Status RouteAccess::permits(const model::Principal& caller) const {
  if (writes && !model::at_least(caller.role, model::Role::kTenantMember)) {
    return fail(forbidden("a read-only key changes nothing"));
  }
  if (!area) return {};
  if ((*area == ScopeArea::kKeys || *area == ScopeArea::kAudit) &&
      !model::at_least(caller.role, model::Role::kTenantAdmin)) {
    return fail(forbidden(fmt::format("the {} area needs a tenant-admin key (or an operator's)",
                                      model::to_string(*area))));
  }
  if (!caller.scopes.permits(*area, writes)) {
    return fail(forbidden(fmt::format("this key's scopes do not include {}:{}",
                                      model::to_string(*area), writes ? "write" : "read")));
  }
  return {};
}

}  // namespace gpurent::server
