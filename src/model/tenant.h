// Tenants, their API keys, and the tokens that let new nodes join.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/field_table.h"
#include "model/scopes.h"

namespace gpurent::model {

// Who a key speaks for, from the most to the least trusted. Operators (admin, operator) run the
// platform and see every tenant; a tenant's own keys see only it:
// - tenant-admin: everything a tenant may do, its API keys and its audit log included;
// - tenant-member: uses the platform (launches, stops, volumes, jobs...), reads its bills, but
//   does not manage keys or read the audit log;
// - read-only: reads what a member reads and changes nothing.
// "tenant", the single tenant role before there were three, is read as tenant-admin.
enum class Role { kAdmin, kOperator, kTenantAdmin, kTenantMember, kReadOnly };
std::string_view to_string(Role role);
bool parse_role(std::string_view text, Role* out);
inline bool from_string(std::string_view text, Role* out) { return parse_role(text, out); }
// Higher is more trusted; a key never makes a key of a higher rank than its own.
int rank(Role role);
inline bool at_least(Role role, Role least) { return rank(role) >= rank(least); }

struct Tenant {
  std::string id;
  std::string name;
  Timestamp created_at{};
};

template <class V, schema::Of<Tenant> S>
void fields(V& visit, S& x) {
  visit("created_at", x.created_at);
  visit("id", x.id);
  visit("name", x.name);
}

struct ApiKey {
  std::string id;
  std::string tenant_id;
  Role role = Role::kTenantAdmin;
  std::string name;
  std::string secret_hash;  // the secret itself is shown once, at creation, and never stored
  std::string prefix;       // the first characters of the secret, to recognise it in listings
  Timestamp created_at{};
  // A console session (a browser's cookie) is a key of its own, made when someone signs in with
  // an API key: session_of names that key, and the session ends at expires_at, when it is
  // revoked (sign-out), or when that key is.
  std::string session_of;
  std::optional<Timestamp> expires_at;
  std::optional<Timestamp> revoked_at;  // a revoked key authenticates nothing
  // What the key may reach beyond its role's bounds (model/scopes.h), in canonical form; none:
  // everything its role allows.
  std::vector<std::string> scopes;
};

template <class V, schema::Of<ApiKey> S>
void fields(V& visit, S& x) {
  visit("created_at", x.created_at);
  visit("expires_at", x.expires_at, schema::kOmitEmpty);
  visit("id", x.id);
  visit("name", x.name);
  visit("prefix", x.prefix);
  visit("revoked_at", x.revoked_at, schema::kOmitEmpty);
  visit("role", x.role);
  visit("scopes", x.scopes, schema::kOmitEmpty);
  visit("secret_hash", x.secret_hash);
  visit("session_of", x.session_of, schema::kOmitEmpty);
  visit("tenant_id", x.tenant_id);
}

struct JoinToken {
  std::string id;
  std::string secret_hash;
  std::string description;
  Timestamp created_at{};
  Timestamp expires_at{};
};

template <class V, schema::Of<JoinToken> S>
void fields(V& visit, S& x) {
  visit("created_at", x.created_at);
  visit("description", x.description);
  visit("expires_at", x.expires_at);
  visit("id", x.id);
  visit("secret_hash", x.secret_hash);
}

// Who is calling: resolved from an API key.
struct Principal {
  std::string tenant_id;
  std::string key_id;
  Role role = Role::kTenantAdmin;
  ScopeSet scopes;  // everything, unless the key names its scopes
  bool is_operator() const { return role == Role::kAdmin || role == Role::kOperator; }
};

// The platform acting on its own behalf (bootstrap, internal lookups): sees everything.
inline Principal platform_principal() { return Principal{"", "platform", Role::kAdmin, {}}; }

// A POST with an Idempotency-Key: a retry returns the object the first call created.
struct IdempotencyRecord {
  std::string tenant_id;
  std::string key;
  std::string fingerprint;  // hash of the request body; a different body under the same key is 409
  std::string object_id;
  Timestamp created_at{};
};

template <class V, schema::Of<IdempotencyRecord> S>
void fields(V& visit, S& x) {
  visit("created_at", x.created_at);
  visit("fingerprint", x.fingerprint);
  visit("key", x.key);
  visit("object_id", x.object_id);
  visit("tenant_id", x.tenant_id);
}

}  // namespace gpurent::model
