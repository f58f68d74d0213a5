// What the server reads and signs of a browser's requests: HMAC-signed tokens under the server's
// session key (kept in the data directory, so a restart keeps browsers signed in), cookies and
// origins. The services proxy's login tickets and cookies (proxy.h) and the console's CSRF tokens
// (console.h) are made here.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"

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
  // Reads the key from `path`, or creates it there (mode 0600) with a random one.
  static Result<SessionSigner> load_or_create(const std::string& path);
  static SessionSigner random();
  // The key in hex, and a signer of a key so written (servers sharing a store share their key
  // through it: server.cc); Error "internal" when `hex` is not a key.
  std::string key_hex() const;
  static Result<SessionSigner> from_hex(std::string_view hex);

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
