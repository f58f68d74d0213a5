// The HTTP/1.1 server both the control plane (src/server) and the node agent's node API
// (src/agent/node_api.h) serve: Boost.Beast on C++20 coroutines, with keep-alive. Beast parses
// the requests; an answer sent whole has its head formatted here, byte for byte as Beast's
// serializer writes it, and goes out with its body in one write (the serializer cost more than
// the rest of a small request's handling: bench/RESULTS.md).
//
// It turns bytes into Requests and Responses, and forwards the requests a Forwarder claims to
// another HTTP server (a reverse proxy: bodies stream both ways, WebSocket upgrades become a byte
// tunnel), and nothing more: routing, auth and the APIs live with their users, so Beast is compiled
// in this one translation unit. Limits (stated, enforced here): a
// request body of at most max_body_bytes (413 otherwise), headers of at most 16 KiB, an idle
// keep-alive connection is closed after idle_timeout, and at most max_connections are open at once
// (further ones are accepted and closed at once, so a flood cannot exhaust file descriptors).
// With a TlsContext (set_tls) every connection is TLS, its handshake within kHandshakeTimeout.
//
// Threading: everything runs on the io_context it is given, which the server runs on one thread;
// handlers may therefore touch single-threaded state without locks.
#pragma once

#include <utility>  // before Asio: Boost 1.74 with C++20 coroutines needs it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"

namespace gpurent::net {

namespace asio = boost::asio;

struct Request {
  std::string method;                        // "GET"
  std::string path;                          // percent-decoded, without the query
  std::map<std::string, std::string> query;  // percent-decoded
  std::string body;
  std::string authorization;    // the Authorization header, verbatim
  std::string idempotency_key;  // the Idempotency-Key header
  std::string content_type;
  std::string accept;        // the Accept header, verbatim (a few routes also speak CSV)
  std::string peer_address;  // the connection's remote IP address ("" when unknown)
  // What the web console's requests carry besides (server/console.h): its session cookie, the
  // page's origin and its CSRF token, and what the browser's cache and encodings allow.
  std::string cookie;
  std::string origin;
  std::string host;
  std::string csrf_token;  // the X-CSRF-Token header
  std::string accept_encoding;
  std::string if_none_match;
  std::string forwarded_proto;  // X-Forwarded-Proto: "https" behind a TLS proxy
  bool tls = false;             // it came over TLS to this server (net/tls.h)
  // The common name of the client certificate its connection presented and that verified against
  // the server's client CA ("" when none did): agents' mutual TLS.
  std::string client_certificate;
};

// Produces the next piece of a streamed body, or nullopt at its end.
using ChunkSource = std::function<asio::awaitable<std::optional<std::string>>()>;

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the response is sent chunked: body first (if any), then every chunk until nullopt.
  ChunkSource chunks;
};

using Handler = std::function<asio::awaitable<Response>(Request)>;

// Limits of forwarded exchanges: connecting and each read or write of a plain exchange, and the
// idle time after which a WebSocket tunnel is closed (Jupyter pings its sockets every 30 s).
inline constexpr std::chrono::seconds kForwardConnectTimeout{10};
inline constexpr std::chrono::seconds kForwardIoTimeout{300};
inline constexpr std::chrono::seconds kTunnelIdleTimeout{3600};

// The header of a request a Forwarder claimed; its body has not been read yet.
struct RequestHead {
  std::string method;
  std::string target;                        // verbatim: path and query, still encoded
  std::string path;                          // percent-decoded, without the query
  std::map<std::string, std::string> query;  // percent-decoded
  std::vector<std::pair<std::string, std::string>> headers;  // as received, in order
  std::string peer_address;  // the connection's remote IP address ("" when unknown)
  // The first header of that name (case-insensitive), or "".
  std::string header(std::string_view name) const;
};

// Where a claimed request goes. The request is sent on a new connection with `target` as its
// target, the named headers removed and then `set_headers` set (replacing any of the same name);
// the answer is relayed back as it arrives. A WebSocket upgrade answered 101 becomes a tunnel, and
// so does an upgrade to a raw upstream.
struct ForwardTo {
  std::string host;  // name or address
  uint16_t port = 0;
  std::string target;
  std::vector<std::string> remove_headers;
  std::vector<std::pair<std::string, std::string>> set_headers;
  // The longest wait for the next piece of the exchange (an answer that streams the output of a
  // quiet command waits as long as the command may run).
  std::chrono::seconds idle_timeout = kForwardIoTimeout;
  // The upstream speaks no HTTP (an SSH server): the request, an upgrade without a body, is
  // answered 101 here (with its Upgrade token) and the connection becomes a byte tunnel to it.
  bool raw = false;
};

// A claimed request is either answered here (refused, redirected) or forwarded.
using ForwardDecision = std::variant<Response, ForwardTo>;

struct Forwarder {
  // Whether the request with this method and (decoded) path is forwarded rather than handled.
  std::function<bool(std::string_view method, std::string_view path)> claims;
  std::function<asio::awaitable<ForwardDecision>(RequestHead)> decide;
};

// How long a client has to complete its TLS handshake.
inline constexpr std::chrono::seconds kHandshakeTimeout{10};

class TlsContext;

struct HttpLimits {
  size_t max_body_bytes = 1 << 20;  // of handled requests; forwarded bodies are streamed, unbounded
  std::chrono::seconds idle_timeout{75};
  size_t max_connections = 12'000;  // 10,000 simulated nodes and their pools (agent/sim_fleet.h)
};

class HttpServer {
 public:
  HttpServer(asio::io_context& io, Handler handler, HttpLimits limits = {},
             Forwarder forwarder = {});
  ~HttpServer();
  // Binds and starts accepting; returns the bound port (useful when 0 was asked for).
  Result<uint16_t> listen(const std::string& host, uint16_t port);
  // Connections accepted from now on speak TLS with this context (none: plain HTTP); those open
  // keep theirs. Call on the io_context's thread (a reload on SIGHUP is posted there).
  void set_tls(std::shared_ptr<const TlsContext> tls);
  // Stops accepting; open connections end when their current exchange does.
  void close();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// A problem+json response for an Error.
Response problem_response(const Error& error);

}  // namespace gpurent::net
