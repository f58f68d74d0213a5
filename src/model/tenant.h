// Tenants, their API keys, and the tokens that let new nodes join.
#pragma once

#include <optional>
#include <string>

#include "common/clock.h"
#include "common/field_table.h"

namespace gpurent::model {

enum class Role { kAdmin, kOperator, kTenant };
std::string_view to_string(Role role);
bool parse_role(std::string_view text, Role* out);
inline bool from_string(std::string_view text, Role* out) { return parse_role(text, out); }

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
  Role role = Role::kTenant;
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
  Role role = Role::kTenant;
  bool is_operator() const { return role == Role::kAdmin || role == Role::kOperator; }
};

// The platform acting on its own behalf (bootstrap, internal lookups): sees everything.
inline Principal platform_principal() { return Principal{"", "platform", Role::kAdmin}; }

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
