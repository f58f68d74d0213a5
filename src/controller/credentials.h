// Credentials: who may call. API keys (found by the hash of their secret), the web console's
// sessions (a key of their own, made from an API key, that expires), their revocation, and the
// join tokens that admit nodes.
//
// Invariants: a revoked key authenticates nothing and stays revoked (its row says so); revoking a
// key revokes the sessions made from it; a session never makes another; an expired session or
// join token admits nothing; every change is in the pending ChangeSet, durable with the command
// that made it.
//
// Part of Accounts (accounts.h): Accounts::credentials(); it asks Accounts which tenants exist.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/random.h"
#include "common/result.h"
#include "controller/change_set.h"
#include "controller/commands.h"
#include "model/tenant.h"

namespace gpurent::controller {

class Accounts;

class Credentials {
 public:
  struct Context {
    const Clock& clock;
    Rng& rng;
    ChangeSet& changes;
    const Accounts& accounts;  // which tenants exist
  };
  explicit Credentials(Context context) : c_(context) {}
  Credentials(const Credentials&) = delete;
  Credentials& operator=(const Credentials&) = delete;

  // The keys and join tokens from the store's snapshot.
  void restore(Snapshot& snapshot);

  // --- API keys and console sessions ---
  bool has_admin_key() const;
  // The principal of the key with this hash, unless it is revoked or (a session) expired.
  std::optional<model::Principal> authenticate(std::string_view key_hash) const;
  // By id, revoked or not; null when unknown.
  const model::ApiKey* api_key(std::string_view key_id) const;
  // The key with this hash, unless revoked; null otherwise.
  const model::ApiKey* key_with_hash(std::string_view key_hash) const;
  // The tenant's API keys in id order, revoked ones and console sessions left out; none for a
  // tenant the caller may not see, or for a caller who may not manage keys.
  std::vector<const model::ApiKey*> api_keys(const model::Principal& caller,
                                             std::string_view tenant_id) const;
  // Tenant admins make keys for their tenant, operators for any tenant, of a role, scopes and
  // expiry no greater than the caller's own (a key expiring later is cut to the caller's
  // expiry); members and read-only keys make none (403).
  Result<model::ApiKey> create_api_key(const model::Principal& caller, NewApiKey request);
  // The bootstrap admin's key, of its tenant (Accounts::bootstrap_admin makes the tenant).
  model::ApiKey add_admin_key(std::string tenant_id, std::string_view secret_hash,
                              std::string_view prefix);
  // A console session for a caller signed in with an API key (not with a session): a key of the
  // caller's tenant and role, made from the caller's key, expiring after `lifetime`.
  Result<model::ApiKey> create_session(const model::Principal& caller, std::string secret_hash,
                                       std::string prefix, Millis lifetime);
  // Revokes a key, and the console sessions made from it. Tenant admins revoke their own
  // tenant's keys, operators anyone's, admin keys only admins; any key itself (a session signing
  // out). 404 api_key_not_found for a key the caller may not see or already revoked.
  Result<model::ApiKey> revoke_api_key(const model::Principal& caller, std::string_view key_id);

  // --- Join tokens ---
  // Operators: a token that admits any number of nodes for `ttl`.
  Result<model::JoinToken> create_join_token(const model::Principal& caller,
                                             std::string description, Millis ttl,
                                             std::string secret_hash);
  // The join token with this hash, if it exists and has not expired.
  const model::JoinToken* valid_join_token(std::string_view secret_hash) const;

 private:
  // A key that authenticates: its id and its scopes, parsed once.
  struct LiveKey {
    std::string id;
    model::ScopeSet scopes;
  };
  static LiveKey live_key(const model::ApiKey& key);
  static bool manages_keys(const model::Principal& caller);
  static Error keys_need_admin();
  Timestamp now() const { return c_.clock.now(); }
  // A new key (or session), found by its hash from now on and in the pending changes.
  model::ApiKey add(model::ApiKey key);
  void revoke(model::ApiKey& key);

  Context c_;
  std::map<std::string, model::ApiKey, std::less<>> api_keys_;
  std::unordered_map<std::string, LiveKey> key_by_hash_;  // keys not revoked
  // The console sessions made from each key, by the key's id.
  std::unordered_map<std::string, std::vector<std::string>> sessions_of_;
  std::map<std::string, model::JoinToken, std::less<>> join_tokens_;
  std::unordered_map<std::string, std::string> join_token_by_hash_;
};

}  // namespace gpurent::controller
