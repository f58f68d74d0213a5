// The HTTP/1.1 front: a Boost.Beast server on C++20 coroutines, with keep-alive.
//
// It turns bytes into Requests and Responses and nothing more: routing, auth and the API live in
// api.cc, so Beast is compiled in this one translation unit. Limits (stated, enforced here): a
// request body of at most max_body_bytes (413 otherwise), headers of at most 16 KiB, an idle
// keep-alive connection is closed after idle_timeout, and at most max_connections are open at once
// (further ones are accepted and closed at once, so a flood cannot exhaust file descriptors).
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
#include <vector>

#include "common/result.h"

namespace gpurent::server {

namespace asio = boost::asio;

struct Request {
  std::string method;                        // "GET"
  std::string path;                          // percent-decoded, without the query
  std::map<std::string, std::string> query;  // percent-decoded
  std::string body;
  std::string authorization;    // the Authorization header, verbatim
  std::string idempotency_key;  // the Idempotency-Key header
  std::string content_type;
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

struct HttpLimits {
  size_t max_body_bytes = 1 << 20;
  std::chrono::seconds idle_timeout{75};
  size_t max_connections = 10'000;
};

class HttpServer {
 public:
  HttpServer(asio::io_context& io, Handler handler, HttpLimits limits = {});
  ~HttpServer();
  // Binds and starts accepting; returns the bound port (useful when 0 was asked for).
  Result<uint16_t> listen(const std::string& host, uint16_t port);
  // Stops accepting; open connections end when their current exchange does.
  void close();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// A problem+json response for an Error.
Response problem_response(const Error& error);

}  // namespace gpurent::server
