// What the server reads and signs of a browser's requests: HMAC-signed tokens under the server's
// session key (kept in the data directory, or shared through a PostgreSQL store, so a restart or a
// failover keeps browsers signed in; sealed under the secrets key file, common/secret_box.h, in
// both), cookies and origins. The services proxy's login tickets and cookies (proxy.h) and the
// console's CSRF tokens (console.h) are made here.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"
#include "common/secret_box.h"

namespace gpurent::server {

enum class TokenKind : char { kTicket = 't', kSession = 's' };

// What a valid token says: which instance's services it opens, for which tenant.
struct SessionClaims {
  std::string instance_id;
  std::string tenant_id;
};

class SessionSigner {
 public:
  explicit SessionSigner(std::string key);  // 32 bytes
  // Reads the key, sealed under `box`, from `path`, or creates it there (mode 0600) with a random
  // one. A file written before keys were sealed (the key's bytes themselves) is sealed in place.
  // Errors: SecretBox::open's "secret_unsealable" (another key file: the server must not start),
  // "internal" for a file that is not a key or cannot be read or written.
  static Result<SessionSigner> load_or_create(const std::string& path, const SecretBox& box);
  static SessionSigner random();
  // The key sealed under `box`, and a signer of a key so stored (servers sharing a store share
  // their key through it: server.cc). A key stored in hex, before keys were sealed, is read too
  // (is_sealed tells the caller to seal it). Errors as load_or_create's.
  std::string sealed_key(const SecretBox& box) const;
  static Result<SessionSigner> from_stored(std::string_view stored, const SecretBox& box);

  std::string sign(TokenKind kind, std::string_view instance_id, std::string_view tenant_id,
                   Timestamp expires) const;
  // What a token of this kind, unexpired at `now` and signed with this key, says;
  // kUnauthenticated ("invalid_session") otherwise. The caller checks the instance it names.
  Result<SessionClaims> verify(std::string_view token, TokenKind kind, Timestamp now) const;
  // The HMAC-SHA-256 of the text under the key, in hex (the console's CSRF tokens).
  std::string mac(std::string_view text) const;

 private:
  std::string key_;
};

// The value of cookie `name` in a Cookie header, if present.
std::optional<std::string> cookie_value(std::string_view header, std::string_view name);
// The Cookie header without cookie `name` (empty when nothing else is left).
std::string without_cookie(std::string_view header, std::string_view name);
// Whether an Origin header names the host a request was sent to (scheme aside).
bool origin_matches_host(std::string_view origin, std::string_view host);

}  // namespace gpurent::server
