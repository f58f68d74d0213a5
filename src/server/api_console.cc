// The web console's routes (server/console.h): its files, and signing in and out.
#include "api/accounts.h"
#include "api/read_request.h"
#include "common/random.h"
#include "server/api_impl.h"

namespace gpurent::server {

namespace {

Response asset_or_not_found(std::string_view name, const Request& request) {
  const ConsoleAsset* asset = find_console_asset(name);
  if (asset == nullptr) return problem_response(Error::not_found("file", name));
  return console_asset_response(*asset, request);
}

}  // namespace

void Api::Impl::add_console_routes() {
  router.add("GET", "/", [](Request& request, const PathParams&) -> asio::awaitable<Response> {
    co_return asset_or_not_found("index.html", request);
  });
  router.add("GET", "/console/{name}",
             [](Request& request, const PathParams& params) -> asio::awaitable<Response> {
               co_return asset_or_not_found(params.find("name")->second, request);
             });
  router.add("POST", "/v1/session",
             [this](Request& request, const PathParams&) -> asio::awaitable<Response> {
               std::optional<Principal> caller;
               const AuditedCall audited(*this, request);
               Response response = co_await sign_in(request, caller);
               co_await audit(caller ? &*caller : nullptr, request, "POST /v1/session", response);
               co_return response;
             });
  keyed("GET", "/v1/session",
        [this](const Principal& caller, Request&, const PathParams&) -> asio::awaitable<Response> {
          co_return result_response(200, console_session(caller),
                                    [this](const model::ApiKey* s) { return session_view(*s); });
        });
  keyed("DELETE", "/v1/session",
        [this](const Principal& caller, Request& request,
               const PathParams&) -> asio::awaitable<Response> {
          auto session = console_session(caller);
          if (!session) co_return problem_response(session.error());
          auto revoked = co_await mutate(request, [&](Controller& c) {
            return c.accounts().credentials().revoke_api_key(caller, caller.key_id);
          });
          if (!revoked) co_return problem_response(revoked.error());
          co_return Response{
              204, "", "", {{"Set-Cookie", ConsoleSessions::removed_cookie(request)}}, {}};
        });
}

asio::awaitable<Response> Api::Impl::sign_in(Request& request, std::optional<Principal>& caller) {
  auto body = parse_json_object(request.body);
  if (!body) co_return problem_response(body.error());
  auto parsed = api::read_request<api::SessionCreate>(*body);
  if (!parsed) co_return problem_response(parsed.error());
  // A page of another origin must not sign a browser in (to a key of its choosing).
  if (!request.origin.empty() && !origin_matches_host(request.origin, request.host)) {
    co_return problem_response(Error{ErrorKind::kPermissionDenied, "cross_origin",
                                     "sign in from the console's own origin"});
  }
  auto key = authenticate_key(ctl(), parsed->key);
  if (!key) co_return problem_response(key.error());
  caller = std::move(*key);
  const std::string secret = new_secret("gcs_");
  auto session = co_await mutate(request, [&](Controller& c) {
    return c.accounts().credentials().create_session(*caller, hash_secret(secret),
                                                     secret.substr(0, 12), kConsoleSessionLifetime);
  });
  if (!session) co_return problem_response(session.error());
  Response response = json_response(201, session_view(*session));
  response.headers.emplace_back("Set-Cookie", ConsoleSessions::cookie(secret, request));
  response.headers.emplace_back("Cache-Control", "no-store");
  co_return response;
}

Result<const model::ApiKey*> Api::Impl::console_session(const Principal& caller) {
  const model::ApiKey* key = ctl().accounts().credentials().api_key(caller.key_id);
  if (key == nullptr || key->session_of.empty()) {
    return fail(Error{ErrorKind::kNotFound, "session_not_found",
                      "this request is authenticated by an API key, not by a console session"});
  }
  return key;
}

Json Api::Impl::session_view(const model::ApiKey& session) const {
  return api::Session{.tenant_id = session.tenant_id,
                      .key_id = session.id,
                      .role = session.role,
                      .session_of = session.session_of,
                      .csrf_token = console.csrf_token(session.id),
                      .expires_at = session.expires_at.value_or(Timestamp{})};
}

}  // namespace gpurent::server
