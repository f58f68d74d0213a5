// The REST API (docs/api.md, docs/openapi.json): authentication, input validation, and the
// translation between HTTP and controller commands. Runs on the server's I/O thread.
//
// Every input is validated here before it reaches the controller: unknown fields, wrong types,
// out-of-range numbers and oversized strings are 400s naming the field. Mutations go through the
// ControllerHost, so a 2xx answer means the change is durable.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "net/http.h"
#include "server/host.h"
#include "server/log_store.h"
#include "server/outbound.h"
#include "server/proxy.h"
#include "server/rate_limiter.h"

namespace gpurent::server {

// The API speaks through the shared HTTP server (src/net).
using net::ChunkSource;
using net::HttpServer;
using net::problem_response;
using net::Request;
using net::Response;

class UploadStore;

class Api {
 public:
  // `sessions` signs the browser sessions of the services proxy (proxy.h).
  Api(ControllerHost& host, LogStore& logs, SessionSigner sessions = SessionSigner::random());
  ~Api();
  asio::awaitable<Response> handle(Request request);
  // The requests forwarded to nodes (the services proxy and exec, proxy.h), for the HttpServer.
  net::Forwarder forwarder();
  // GET /metrics then needs "Authorization: Bearer <token>"; without one it is open.
  void set_metrics_token(std::string token);
  // Agents' calls are then accepted only from the address their node registered from.
  void set_bind_node_credentials(bool bind);
  // Agents' routes need a verified client certificate ([tls] client_ca_file: mutual TLS); 401
  // client_certificate_required otherwise.
  void set_agents_need_certificates(bool need);
  // The API's rate limits (server/rate_limiter.h); the defaults until set.
  void set_rate_limits(const RateLimitConfig& config);
  // Which registries tenants' images may name (server/outbound.h); any public one until set.
  void set_outbound(const OutboundPolicy& outbound);
  // Where tenants' uploads are kept (workdirs); without one, upload routes answer 503.
  void set_uploads(UploadStore* uploads);
  // (method, path pattern) of every route, the forwarded ones included.
  std::vector<std::pair<std::string, std::string>> routes() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpurent::server
