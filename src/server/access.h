// What a route needs of its caller beyond a valid key: the area of the API it belongs to (the
// key's scopes must grant it, model/scopes.h) and whether it changes anything (read-only keys
// change nothing). Every route a key reaches is classified here, by its pattern; the roles'
// other bounds (operator-only routes, another tenant's objects) stay with the commands.
//
// The rules, in the order they are checked:
//   - writing needs at least a tenant-member key;
//   - the keys and audit areas need at least a tenant-admin key, for reading too;
//   - the key's scopes must grant the area (for writing, when the route writes).
// A few POSTs only compute an answer (an estimate, a quote) and count as reads; a few routes
// belong to no area (who am I, the catalog of GPU types and offers, the console session) and
// every valid key reaches them.
#pragma once

#include <optional>
#include <string_view>

#include "common/result.h"
#include "model/scopes.h"
#include "model/tenant.h"

namespace gpurent::server {

struct RouteAccess {
  std::optional<model::ScopeArea> area;  // none: every valid key reaches the route
  bool writes = false;
  bool creates = false;  // a POST to a collection (server/rate_limiter.h limits these apart)
  bool audited = false;  // may change something: recorded in the audit log (model/audit.h)

  // Whether `caller` may call the route: {} or a 403 "forbidden" saying what is missing.
  Status permits(const model::Principal& caller) const;
};

// The access of the route with this method and pattern ("/v1/instances/{id}"); none for a
// pattern outside every area, which a route taking API keys must not have.
std::optional<RouteAccess> route_access(std::string_view method, std::string_view pattern);

}  // namespace gpurent::server
