#include "controller/credentials.h"

#include <fmt/format.h>

#include <algorithm>

#include "controller/accounts.h"
#include "controller/internal.h"

namespace gpurent::controller {

void Credentials::restore(Snapshot& snapshot) {
  for (auto& key : snapshot.api_keys) {
    if (!key.revoked_at) key_by_hash_.emplace(key.secret_hash, live_key(key));
    if (!key.session_of.empty()) sessions_of_[key.session_of].push_back(key.id);
    api_keys_.emplace(key.id, std::move(key));
  }
  for (auto& token : snapshot.join_tokens) {
    join_token_by_hash_.emplace(token.secret_hash, token.id);
    join_tokens_.emplace(token.id, std::move(token));
  }
}

Credentials::LiveKey Credentials::live_key(const model::ApiKey& key) {
  // Stored scopes were valid when the key was made; a scope a later version no longer knows
  // grants nothing rather than everything.
  auto scopes = model::ScopeSet::parse(key.scopes);
  return {key.id, scopes ? *scopes : model::ScopeSet::parse({"*:read"}).value()};
}

const model::ApiKey* Credentials::key_with_hash(std::string_view key_hash) const {
  const auto it = key_by_hash_.find(std::string(key_hash));
  return it == key_by_hash_.end() ? nullptr : &api_keys_.at(it->second.id);
}

model::ApiKey Credentials::add_admin_key(std::string tenant_id, std::string_view secret_hash,
                                         std::string_view prefix) {
  model::ApiKey key{.id = c_.rng.id("k-"),
                    .tenant_id = std::move(tenant_id),
                    .role = model::Role::kAdmin,
                    .name = "bootstrap",
                    .secret_hash = std::string(secret_hash),
                    .prefix = std::string(prefix),
                    .created_at = now()};
  return add(std::move(key));
}

model::ApiKey Credentials::add(model::ApiKey key) {
  key_by_hash_.emplace(key.secret_hash, live_key(key));
  if (!key.session_of.empty()) sessions_of_[key.session_of].push_back(key.id);
  api_keys_.emplace(key.id, key);
  c_.changes.api_keys.push_back(key);
  return key;
}

const model::JoinToken* Credentials::valid_join_token(std::string_view secret_hash) const {
  const auto id = join_token_by_hash_.find(std::string(secret_hash));
  if (id == join_token_by_hash_.end()) return nullptr;
  const model::JoinToken& token = join_tokens_.at(id->second);
  return token.expires_at <= now() ? nullptr : &token;
}

bool Credentials::has_admin_key() const {
  return std::any_of(api_keys_.begin(), api_keys_.end(),
                     [](const auto& entry) { return entry.second.role == model::Role::kAdmin; });
}

std::optional<Principal> Credentials::authenticate(std::string_view key_hash) const {
  const auto it = key_by_hash_.find(std::string(key_hash));
  if (it == key_by_hash_.end()) return std::nullopt;
  const auto& key = api_keys_.at(it->second.id);
  if (key.expires_at && *key.expires_at <= now()) return std::nullopt;
  return Principal{key.tenant_id, key.id, key.role, it->second.scopes};
}

const model::ApiKey* Credentials::api_key(std::string_view key_id) const {
  const auto it = api_keys_.find(key_id);
  return it == api_keys_.end() ? nullptr : &it->second;
}

std::vector<const model::ApiKey*> Credentials::api_keys(const Principal& caller,
                                                        std::string_view tenant_id) const {
  std::vector<const model::ApiKey*> out;
  if (!visible_to(caller, tenant_id) || !manages_keys(caller)) return out;
  for (const auto& [id, key] : api_keys_) {
    if (key.tenant_id == tenant_id && key.session_of.empty() && !key.revoked_at) {
      out.push_back(&key);
    }
  }
  return out;
}

Result<model::ApiKey> Credentials::create_session(const Principal& caller, std::string secret_hash,
                                                  std::string prefix, Millis lifetime) {
  const model::ApiKey* signed_in_with = api_key(caller.key_id);
  if (signed_in_with == nullptr || !signed_in_with->session_of.empty()) {
    return fail(Error{ErrorKind::kPermissionDenied, "forbidden",
                      "sign in with an API key, not with a console session"});
  }
  // A session ends when its key does, if that is sooner, and reaches what its key reaches.
  Timestamp ends = now() + lifetime;
  if (signed_in_with->expires_at) ends = std::min(ends, *signed_in_with->expires_at);
  model::ApiKey session{.id = c_.rng.id("k-"),
                        .tenant_id = caller.tenant_id,
                        .role = caller.role,
                        .name = "console session",
                        .secret_hash = std::move(secret_hash),
                        .prefix = std::move(prefix),
                        .created_at = now(),
                        .session_of = caller.key_id,
                        .expires_at = ends,
                        .scopes = signed_in_with->scopes};
  return add(std::move(session));
}

Result<model::ApiKey> Credentials::revoke_api_key(const Principal& caller,
                                                  std::string_view key_id) {
  const auto it = api_keys_.find(key_id);
  // A session is revoked by signing out (its own caller) or with the key it was made from.
  const bool own = it != api_keys_.end() && caller.key_id == it->second.id;
  const bool visible = it != api_keys_.end() && !it->second.revoked_at &&
                       visible_to(caller, it->second.tenant_id) &&
                       (it->second.session_of.empty() || own);
  if (!visible) return fail(Error::not_found("api_key", key_id));
  // Any key may end itself (signing out); other keys are managed by tenant admins and operators.
  if (!own && !manages_keys(caller)) return fail(keys_need_admin());
  if (it->second.role == model::Role::kAdmin && caller.role != model::Role::kAdmin) {
    return fail(Error{ErrorKind::kPermissionDenied, "forbidden",
                      "only an admin key may revoke an admin key"});
  }
  revoke(it->second);
  if (const auto sessions = sessions_of_.find(it->second.id); sessions != sessions_of_.end()) {
    for (const auto& session_id : sessions->second) {
      model::ApiKey& session = api_keys_.at(session_id);
      if (!session.revoked_at) revoke(session);
    }
  }
  return it->second;
}

void Credentials::revoke(model::ApiKey& key) {
  key.revoked_at = now();
  key_by_hash_.erase(key.secret_hash);
  c_.changes.api_keys.push_back(key);
}

bool Credentials::manages_keys(const Principal& caller) {
  return model::at_least(caller.role, model::Role::kTenantAdmin);
}

Error Credentials::keys_need_admin() {
  return Error{ErrorKind::kPermissionDenied, "forbidden",
               "managing API keys needs a tenant-admin key (or an operator's)"};
}

Result<model::ApiKey> Credentials::create_api_key(const Principal& caller, NewApiKey request) {
  if (request.tenant_id.empty()) request.tenant_id = caller.tenant_id;
  if (!visible_to(caller, request.tenant_id) || !c_.accounts.has_tenant(request.tenant_id)) {
    return fail(Error::not_found("tenant", request.tenant_id));
  }
  if (!manages_keys(caller)) return fail(keys_need_admin());
  const model::Role role =
      request.role.value_or(caller.is_operator() ? model::Role::kTenantAdmin : caller.role);
  // A key never grants more than its maker has: no higher role, no scope the maker lacks, no
  // life beyond the maker's own.
  if (!model::at_least(caller.role, role)) {
    return fail(Error{ErrorKind::kPermissionDenied, "forbidden",
                      fmt::format("a {} key may not create {} keys", model::to_string(caller.role),
                                  model::to_string(role))});
  }
  // No scopes asked for: the maker's own.
  GPURENT_TRY(scopes, request.scopes.empty() ? Result<model::ScopeSet>(caller.scopes)
                                             : model::ScopeSet::parse(request.scopes));
  if (!caller.scopes.includes(scopes)) {
    return fail(Error{ErrorKind::kPermissionDenied, "forbidden",
                      fmt::format("a key may grant only scopes its maker has ({})",
                                  fmt::join(caller.scopes.names(), ", "))});
  }
  const model::ApiKey* maker = api_key(caller.key_id);
  std::optional<Timestamp> expires_at = request.expires_at;
  if (expires_at && *expires_at <= now()) {
    return fail(Error::invalid("invalid_expiry", "expires_at must be in the future"));
  }
  if (maker != nullptr && maker->expires_at && (!expires_at || *expires_at > *maker->expires_at)) {
    expires_at = maker->expires_at;
  }
  model::ApiKey key{.id = c_.rng.id("k-"),
                    .tenant_id = request.tenant_id,
                    .role = role,
                    .name = std::move(request.name),
                    .secret_hash = std::move(request.secret_hash),
                    .prefix = std::move(request.prefix),
                    .created_at = now(),
                    .expires_at = expires_at,
                    .scopes = scopes.everything() ? std::vector<std::string>{} : scopes.names()};
  return add(std::move(key));
}

Result<model::JoinToken> Credentials::create_join_token(const Principal& caller,
                                                        std::string description, Millis ttl,
                                                        std::string secret_hash) {
  if (!caller.is_operator()) return fail(forbidden("create join tokens"));
  model::JoinToken token{c_.rng.id("jt-"), std::move(secret_hash), std::move(description), now(),
                         now() + ttl};
  join_token_by_hash_.emplace(token.secret_hash, token.id);
  join_tokens_.emplace(token.id, token);
  c_.changes.join_tokens.push_back(token);
  return token;
}

}  // namespace gpurent::controller
