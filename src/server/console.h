// The web console's server side: its static files and its browser sessions. The console itself
// (web/src/) is a client of the public API, like the CLI (DESIGN.md).
//
// Files: web/src/ and uPlot's build (web/node_modules/uplot/dist/), embedded in the binary at
// build time, each with its gzip form and an ETag (cmake/embed_console.cmake). GET / is the
// console's page, GET /console/<name> each other file. A file is sent gzip-compressed when the
// browser accepts it, 304 when its ETag is the one the browser has, and with headers that keep
// the page from running anything but its own files: a Content-Security-Policy without inline
// script or style, no framing, no MIME sniffing, no referrer.
//
// Sessions: a browser signs in by sending an API key once (POST /v1/session); the server makes a
// console session, a key of its own made from that key (Accounts::create_session), and gives its
// secret to the browser only as an HttpOnly, SameSite=Strict cookie (Secure behind TLS), which
// authenticates every later request that has no Authorization header. The cookie is the
// browser's ambient credential, so a request authenticated by it that may change something (any
// method but GET and HEAD) must also carry the session's CSRF token (X-CSRF-Token, an HMAC of the
// session's id under the server's session key: the page reads it from POST or GET /v1/session,
// which another origin cannot) and, if the browser sent an Origin, come from the server's own.
// Signing out (DELETE /v1/session) revokes the session; revoking the key it was made from
// revokes it too.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "controller/controller.h"
#include "model/tenant.h"
#include "net/http.h"
#include "server/console_assets.h"
#include "server/session_signer.h"

namespace gpurent::server {

// The answer to a GET of the asset: 200 (gzip-compressed if the request accepts gzip) or 304
// (If-None-Match names its ETag), with the security headers above.
net::Response console_asset_response(const ConsoleAsset& asset, const net::Request& request);
// The security headers every console page and file is sent with.
void add_console_security_headers(net::Response& response);

inline constexpr std::chrono::hours kConsoleSessionLifetime{12};

// What authenticating a browser's request reads of it.
struct BrowserRequest {
  std::string method;
  std::string cookie;
  std::string origin;
  std::string host;
  std::string csrf_token;  // X-CSRF-Token

  static BrowserRequest of(const net::Request& request);
  static BrowserRequest of(const net::RequestHead& head);
};

class ConsoleSessions {
 public:
  explicit ConsoleSessions(SessionSigner signer) : signer_(std::move(signer)) {}

  // The caller of a request that has no Authorization header but a console session cookie:
  // its session's principal, or 401 (unknown, expired or revoked session) or 403 (a request
  // that may change something without the session's CSRF token, or from another origin).
  // nullopt when the request has no session cookie.
  std::optional<Result<model::Principal>> authenticate(const controller::Controller& controller,
                                                       const BrowserRequest& request) const;
  // The CSRF token of a session (by its key's id).
  std::string csrf_token(std::string_view session_id) const;

  // The Set-Cookie value that gives the browser a session secret, and the one that removes it.
  static std::string cookie(std::string_view secret, const net::Request& request);
  static std::string removed_cookie(const net::Request& request);

 private:
  SessionSigner signer_;
};

// Whether a request's answer should tell the browser to send cookies over TLS only: it came
// through a TLS proxy (X-Forwarded-Proto: https).
bool behind_tls(const net::Request& request);

}  // namespace gpurent::server
