#include "server/console.h"

#include <algorithm>

#include "common/random.h"
#include "common/secret_box.h"
#include "server/api_http.h"
#include "server/proxy.h"

namespace gpurent::server {

namespace {

// Scripts, styles, images and fetches from the console's own origin only: nothing inline, no
// eval, no plug-ins, no framing of the console, forms and <base> nowhere else.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; frame-src 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'self'";

bool accepts_gzip(std::string_view accept_encoding) {
  // "gzip", "gzip;q=0.8", "deflate, gzip": enough for browsers, which never send q=0 for gzip.
  return accept_encoding.find("gzip") != std::string_view::npos;
}

bool may_change_state(std::string_view method) { return method != "GET" && method != "HEAD"; }

}  // namespace

const ConsoleAsset* find_console_asset(std::string_view name) {
  const auto assets = console_assets();
  const auto it = std::find_if(assets.begin(), assets.end(),
                               [&](const ConsoleAsset& asset) { return asset.name == name; });
  return it == assets.end() ? nullptr : &*it;
}

void add_console_security_headers(net::Response& response) {
  response.headers.emplace_back("Content-Security-Policy", kContentSecurityPolicy);
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("X-Frame-Options", "DENY");
  response.headers.emplace_back("Referrer-Policy", "no-referrer");
}

net::Response console_asset_response(const ConsoleAsset& asset, const net::Request& request) {
  net::Response response{200, std::string(asset.content_type), {}, {}, {}};
  add_console_security_headers(response);
  // Revalidated on every load (a new binary serves new files under the same names), answered
  // 304 while unchanged.
  response.headers.emplace_back("Cache-Control", "no-cache");
  response.headers.emplace_back("ETag", asset.etag);
  response.headers.emplace_back("Vary", "Accept-Encoding");
  if (request.if_none_match == asset.etag) {
    response.status = 304;
    return response;
  }
  if (accepts_gzip(request.accept_encoding)) {
    response.body = asset.gzipped;
    response.headers.emplace_back("Content-Encoding", "gzip");
  } else {
    response.body = asset.body;
  }
  return response;
}

bool behind_tls(const net::Request& request) {
  return request.tls || request.forwarded_proto == "https";
}

BrowserRequest BrowserRequest::of(const net::Request& request) {
  return {request.method, request.cookie, request.origin, request.host, request.csrf_token};
}

BrowserRequest BrowserRequest::of(const net::RequestHead& head) {
  return {head.method, head.header("Cookie"), head.header("Origin"), head.header("Host"),
          head.header("X-CSRF-Token")};
}

std::optional<Result<model::Principal>> ConsoleSessions::authenticate(
    const controller::Controller& controller, const BrowserRequest& request) const {
  const auto secret = cookie_value(request.cookie, kConsoleCookie);
  if (!secret) return std::nullopt;
  const auto found = controller.accounts().credentials().authenticate(hash_secret(*secret));
  if (!found) {
    return fail(unauthenticated("the console session is unknown, expired or signed out"));
  }
  if (may_change_state(request.method)) {
    if (!secrets_equal(request.csrf_token, csrf_token(found->key_id))) {
      return fail(Error{ErrorKind::kPermissionDenied, "csrf_token_invalid",
                        "a console request that changes something needs its session's "
                        "X-CSRF-Token (from GET /v1/session)"});
    }
    if (!request.origin.empty() && !origin_matches_host(request.origin, request.host)) {
      return fail(Error{ErrorKind::kPermissionDenied, "cross_origin",
                        "a console session is accepted from the console's own origin only"});
    }
  }
  return *found;
}

std::string ConsoleSessions::csrf_token(std::string_view session_id) const {
  return signer_.mac("console-csrf." + std::string(session_id));
}

std::string ConsoleSessions::cookie(std::string_view secret, const net::Request& request) {
  return fmt::format(
      "{}={}; Path=/; Max-Age={}; HttpOnly; SameSite=Strict{}", kConsoleCookie, secret,
      std::chrono::duration_cast<std::chrono::seconds>(kConsoleSessionLifetime).count(),
      behind_tls(request) ? "; Secure" : "");
}

std::string ConsoleSessions::removed_cookie(const net::Request& request) {
  return fmt::format("{}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict{}", kConsoleCookie,
                     behind_tls(request) ? "; Secure" : "");
}

}  // namespace gpurent::server
