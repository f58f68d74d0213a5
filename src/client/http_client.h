// A small HTTP/1.1 client (Boost.Beast) for the CLI, the SDK and the node agent.
//
// One HttpClient holds at most one keep-alive connection to one server and is not thread-safe:
// give each thread its own. Every call has a deadline; a dropped connection is re-opened once per
// call (requests are retried only when nothing was sent). Transport failures come back as an Error
// of kind kUnavailable with code "connection_failed" or "timeout"; any HTTP status, 4xx and 5xx
// included, is a successful HttpResponse for the caller to interpret.
//
// Retry rule in detail: a request goes out a second time, on a fresh connection, only when the
// kept-alive connection it was given turned out to be closed by the server: either it was seen
// closed before writing, or the write failed, or (GET and HEAD only, which cannot change state)
// the server closed it without sending a single byte of answer. Nothing else is ever resent.
// Bodies read by send() are limited to kMaxResponseBodyBytes (an Error "response_too_large",
// kind kInternal, beyond it); stream() has no total limit.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace gpurent::client {

inline constexpr uint64_t kMaxResponseBodyBytes = uint64_t{64} << 20;

struct HttpRequest {
  std::string method = "GET";
  std::string target;  // path and query: "/v1/instances?limit=10"
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // e.g. Authorization, Idempotency-Key
};

struct HttpResponse {
  int status = 0;
  std::string content_type;
  std::string body;
};

// How an https:// client trusts servers. The server's certificate must chain to a trusted root and
// name the URL's host (DNS name or IP address); TLS 1.2 at least.
struct TlsOptions {
  // A PEM file of the certificates to trust instead of the system's store ("" = the system's, as
  // OpenSSL finds it: /etc/ssl/certs, or SSL_CERT_FILE / SSL_CERT_DIR when set).
  std::string ca_file;
  // A PEM certificate and its key to present when the server asks for one (mutual TLS: an agent
  // toward a control plane with a client CA); "" for none. Errors: "invalid_client_certificate".
  std::string cert_file;
  std::string key_file;
};

class HttpClient {
 public:
  // base_url is "http://host:port", "https://host:port" (port 443 by default), or
  // "unix:///path/to.sock" for a server on a unix socket (the Docker Engine API). Errors:
  // "invalid_url", and for https "invalid_ca_file" when the trusted certificates cannot be read
  // (and TlsOptions' own).
  //
  // Several servers of one control plane may be given, separated by commas
  // ("http://a:8080,http://b:8080"): a request that reached no API (the server could not be
  // connected to, or a standby answered that it could not forward: 503 "no_leader" or
  // "not_leader", 502 "upstream_unavailable", server/leader_router.h) goes to the next one, round
  // and round with a short pause after each round, until the call's timeout. Nothing that reached
  // an API is sent twice. The client stays with the server that answered.
  static Result<HttpClient> create(std::string_view base_url, const TlsOptions& tls = {});
  HttpClient(HttpClient&&) noexcept;
  HttpClient& operator=(HttpClient&&) noexcept;
  ~HttpClient();

  Result<HttpResponse> send(const HttpRequest& request,
                            std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // Sends the request and, for a 2xx answer, hands the body to on_chunk piece by piece as it
  // arrives (chunked streams such as `logs?follow=true`); on_chunk returns false to stop early.
  // idle_timeout bounds the wait for each piece. Returns the status, and for any other status the
  // whole body (an error document, at most kMaxResponseBodyBytes), which on_chunk never sees.
  Result<HttpResponse> stream(const HttpRequest& request,
                              const std::function<bool(std::string_view)>& on_chunk,
                              std::chrono::milliseconds idle_timeout = std::chrono::minutes(5));

  // Sends the request as an upgrade ("Connection: Upgrade"; the caller names the protocol in an
  // "Upgrade" header) and, once the server answers 101, relays bytes both ways: what in_fd gives
  // to the server, what the server sends to out_fd, until the server closes (in_fd's end only
  // half-closes a plain connection). The descriptors must be pipes, sockets or terminals (not
  // files). Returns the status, 101 after a tunnel that ran, and for any other status the server's
  // answer in whole (an error document, at most kMaxResponseBodyBytes).
  Result<HttpResponse> tunnel(const HttpRequest& request, int in_fd, int out_fd,
                              std::chrono::milliseconds connect_timeout = std::chrono::seconds(30));

  // The server in use ("http://host:port").
  const std::string& base_url() const;
  // Connects to `address` (an IP literal; "": the URL's host, resolved, again) instead of
  // resolving the URL's host, which still names the server to it: the Host header, the TLS server
  // name and the certificate's check. A caller that checked the addresses a name resolves to
  // (server/outbound.h) so connects to one of those, never to the name resolved a second time.
  // For a client of one server. Errors: "invalid_address".
  Status connect_to(std::string_view address);

 private:
  template <class Attempt>
  Result<HttpResponse> with_failover(std::chrono::milliseconds budget, Attempt attempt);
  Result<HttpResponse> send_once(const HttpRequest& request, std::chrono::milliseconds timeout);
  Result<HttpResponse> stream_once(const HttpRequest& request,
                                   const std::function<bool(std::string_view)>& on_chunk,
                                   std::chrono::milliseconds idle_timeout);
  struct Impl;
  explicit HttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpurent::client
