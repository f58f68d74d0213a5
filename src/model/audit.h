// The audit log: who changed what through the API, from where, and how it went.
//
// The server records one entry for every call that may change something (every method but GET
// and HEAD on the API's keyed routes, the console's sign-in, a command run in a workload) and
// for every sign-in, whatever its answer: refused calls are what an audit is for. Entries are
// appended in order (seq increases by one from 1), never changed, and durable before the call is
// answered. Each belongs to the caller's tenant ("" when no key was recognised): operators read
// every entry, a tenant's admins their tenant's (server/access.h).
#pragma once

#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/field_table.h"

namespace gpurent::model {

// The newest kept in memory (the API serves those); the store keeps them all.
inline constexpr size_t kMaxAuditInMemory = 100'000;
inline constexpr size_t kMaxAuditTargetLength = 512;

struct AuditRecord {
  int64_t seq = 0;
  Timestamp at{};
  std::string tenant_id;  // the caller's tenant; "" when no key was recognised
  std::string key_id;     // the key (or console session) that called; "" when none
  std::string role;       // the key's role, as the API names it; "" when none
  std::string address;    // the source address of the request
  std::string action;     // the route: "POST /v1/instances/{id}/stop"
  std::string target;     // the path called, ids and all (at most kMaxAuditTargetLength)
  int status = 0;         // the HTTP status answered; 0 when forwarded to a node (exec, copies)
  std::string outcome;    // "ok", "forwarded", or the problem's code ("forbidden", ...)
};

template <class V, schema::Of<AuditRecord> S>
void fields(V& visit, S& x) {
  visit("action", x.action);
  visit("address", x.address);
  visit("at", x.at);
  visit("key_id", x.key_id);
  visit("outcome", x.outcome);
  visit("role", x.role);
  visit("seq", x.seq);
  visit("status", x.status);
  visit("target", x.target);
  visit("tenant_id", x.tenant_id);
}

}  // namespace gpurent::model
