// The tenant side of the services proxy and of `gpurent exec`: which requests the server forwards
// to a node's agent (node API, agent/node_api.h), after checking who asks.
//
//   ANY  /i/<instance>/<service>/...     -> the node's agent, path and query unchanged, which
//                                           forwards to the service on the node's loopback
//   POST /v1/instances/<id>/exec         -> the node's agent, POST /v1/node/exec
//   POST /v1/instances/<id>/files?upload=U&path=P
//                                        -> the node's agent, POST /v1/node/files (`gpurent cp`)
//   POST /v1/volumes/<id>/files?upload=U&path=P
//                                        -> the volume's node's agent, POST /v1/node/volume-files
//   GET  /v1/instances/<id>/ssh          -> the node's agent, GET /v1/node/ssh: an upgrade the
//                                           node answers 101, then a byte tunnel to the VM's sshd
//                                           (`gpurent ssh`)
//
// Who may: the instance's tenant (or an operator), by API key (`Authorization: Bearer`), by the
// web console's session (exec and copies, with its CSRF token: console.h) or, on /i/ only, by a
// browser session cookie of the services' own. A browser gets the cookie from a login ticket:
// `gpurent jupyter ID` asks POST /v1/instances/<id>/services/<service>/ticket for a short-lived
// signed ticket and opens /i/<id>/<service>/?login=<ticket>; the server checks it, sets the cookie
// (HttpOnly, SameSite=Lax, Path=/i/<id>/) and redirects to the same URL without the ticket.
// Another tenant's key, cookie or ticket gets 404, as everywhere in this API. A cookie-
// authenticated request whose Origin is not the server's own is refused (403): the cookie is the
// browser's ambient credential, and a service on the node no longer checks origins itself (the
// agent presents it the request as coming from its own address).
//
// A copy (model/file_copy.h) is checked here before it is forwarded: the caller's instance,
// running, or volume, on a node that is up; the caller's complete upload; a path that does not
// climb. The node is then granted the upload for kCopyGrantLifetime: its agent fetches it with GET
// /v1/agent/upload, which serves a node only the uploads it was granted or that an instance placed
// on it unpacks (Controller::node_uses_workdir). Grants live in memory (a restarted server forgets
// them; the copy is asked again) and are at most kMaxCopyGrants.
//
// Tickets and cookies are HMAC-SHA-256 tokens "<kind>.<instance>.<tenant>.<expiry>.<mac>" under
// the server's session key (kept in the data directory, so a restart keeps browsers signed in).
//
// Where a node's agent listens, and its secret, come with every report (NodeEndpoints); they are
// not persisted: a restarted server knows them again after one report interval, and a restarted
// agent's new secret replaces the old one at its first report.
//
// Threading: the server's I/O thread, like the API.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/clock.h"
#include "common/result.h"
#include "model/tenant.h"
#include "net/http.h"
#include "server/console.h"
#include "server/host.h"
#include "server/session_signer.h"
#include "server/upload_store.h"

namespace gpurent::server {

inline constexpr std::string_view kSessionCookie = "gpurent_session";
// The web console's session cookie (server/console.h): never forwarded to a service either.
inline constexpr std::string_view kConsoleCookie = "gpurent_console";
inline constexpr std::chrono::seconds kTicketLifetime{120};
inline constexpr std::chrono::seconds kSessionLifetime{12 * 3600};
inline constexpr std::chrono::seconds kCopyGrantLifetime{600};
inline constexpr size_t kMaxCopyGrants = 10'000;
// How long a node may take to unpack a copy before the server stops waiting for its answer.
inline constexpr std::chrono::seconds kCopyAnswerTimeout{900};

// "Bearer <key>" -> the key's principal; kUnauthenticated otherwise.
Result<model::Principal> authenticate_api_key(const controller::Controller& controller,
                                              std::string_view authorization);
// An API key's secret (the console's sign-in sends it in its body) -> its principal;
// kUnauthenticated for an unknown, revoked or expired one, or one longer than any key.
inline constexpr size_t kMaxApiKeyLength = 256;
Result<model::Principal> authenticate_key(const controller::Controller& controller,
                                          std::string_view key);

// A request target without its `login` query parameter (kept verbatim otherwise).
std::string without_login_parameter(std::string_view target);

struct NodeEndpoint {
  std::string host;
  uint16_t port = 0;
  std::string secret;
};
// "host:port" or "[v6]:port"; nothing when malformed.
std::optional<NodeEndpoint> parse_node_endpoint(std::string_view address, std::string secret);

// What the API's gate does for the writes the proxy forwards (exec and copies), as for its own
// routes: the caller's key's rate limits before (`admit`: nullopt within them, else the answer),
// and after the decision, its audit entry (forwarded, or answered here).
struct ForwardedWriteGate {
  std::function<std::optional<net::Response>(const model::Principal&)> admit;
  std::function<asio::awaitable<void>(const model::Principal* caller, const net::RequestHead&,
                                      std::string_view action, const net::ForwardDecision&)>
      audit;
};

class TenantProxy {
 public:
  TenantProxy(ControllerHost& host, SessionSigner signer, const ConsoleSessions& console);

  // Which requests are forwarded (see the header comment).
  static bool claims(std::string_view method, std::string_view path);
  asio::awaitable<net::ForwardDecision> decide(net::RequestHead head);
  // Set before the first request.
  void set_write_gate(ForwardedWriteGate gate) { gate_ = std::move(gate); }

  // From every agent report.
  void node_reported(const std::string& node_id, std::string_view address, std::string secret);
  // Where tenants' uploads are kept; without it, copies are refused (503).
  void set_uploads(const UploadStore* uploads) { uploads_ = uploads; }
  // Whether the node was granted the upload by a copy, less than kCopyGrantLifetime ago.
  bool node_may_read(std::string_view node_id, std::string_view upload_id) const;
  // A login ticket for the instance's service, and when it expires.
  Result<std::pair<std::string, Timestamp>> ticket(const model::Principal& caller,
                                                   std::string_view instance_id,
                                                   std::string_view service);

 private:
  // The caller of a forwarded request, from its API key or console session (401 otherwise).
  Result<model::Principal> authenticated(const net::RequestHead& head);
  // Whether its role and scopes may write in `area` (403 otherwise).
  static Status may_write(const model::Principal& caller, model::ScopeArea area);
  // Both.
  Result<model::Principal> caller_of(const net::RequestHead& head, model::ScopeArea area);
  // caller_of() for a write, within the key's rate limits (gate_.admit); `caller` is set once
  // known, for the audit entry.
  std::optional<net::Response> admit_writer(const net::RequestHead& head, model::ScopeArea area,
                                            std::optional<model::Principal>& caller);
  net::ForwardDecision decide_service(const net::RequestHead& head);
  net::ForwardDecision decide_exec(const net::RequestHead& head, std::string_view instance_id,
                                   std::optional<model::Principal>& caller);
  // An SSH tunnel to a VM instance: an upgrade forwarded to its node, which answers 101.
  net::ForwardDecision decide_ssh(const net::RequestHead& head, std::string_view instance_id,
                                  std::optional<model::Principal>& caller);
  enum class CopyInto { kInstance, kVolume };
  net::ForwardDecision decide_copy(const net::RequestHead& head, CopyInto into, std::string_view id,
                                   std::optional<model::Principal>& caller);
  // The node API target of a copy, once the caller, the upload and the path are checked.
  Result<std::pair<std::string, NodeEndpoint>> copy_target(const model::Principal& caller,
                                                           CopyInto into, std::string_view id,
                                                           const std::string& upload_id,
                                                           const std::string& path);
  Result<NodeEndpoint> endpoint_of(std::string_view node_id, std::string_view what) const;
  void grant(const std::string& node_id, const std::string& upload_id);
  // The running instance's node API, or why the request cannot reach it.
  Result<NodeEndpoint> reachable(const model::Instance& instance) const;
  controller::Controller& ctl() { return host_.controller(); }

  ControllerHost& host_;
  SessionSigner signer_;
  const ConsoleSessions& console_;
  // Tickets and sessions expire in wall-clock time; the controller's clock is its own.
  SystemClock clock_;
  std::unordered_map<std::string, NodeEndpoint> nodes_;
  const UploadStore* uploads_ = nullptr;
  std::map<std::pair<std::string, std::string>, Timestamp> grants_;  // (node, upload) -> expiry
  ForwardedWriteGate gate_;
};

}  // namespace gpurent::server
