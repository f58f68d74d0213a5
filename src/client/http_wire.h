// What the two HTTP clients (http_client.h, blocking; async_http.h, coroutines) share about the
// wire, so that they accept the same URLs and send only the same well-formed requests.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "client/http_client.h"
#include "common/result.h"

namespace gpurent::client {

// A server's base URL taken apart.
struct BaseUrl {
  std::string host;  // without IPv6 brackets, for the resolver
  std::string port;
  std::string authority;    // host[:port] as written, for the Host header
  std::string base_url;     // "http[s]://" + authority, or the unix URL as given
  std::string socket_path;  // unix:// URLs: the socket to connect to, and no host or port
  bool tls = false;         // https://
};

// "http://host:port", "https://host:port" (port 443 by default), "host:port" (http), or
// "unix:///path/to.sock"; a bare "/" after the authority is allowed. Error "invalid_url" naming
// what is wrong.
Result<BaseUrl> parse_base_url(std::string_view url);

// A request either client may send: a known method, a target that is a path without spaces or
// line breaks, and header names and values that cannot smuggle in more headers (a value may
// come from a file). Error "invalid_request" naming what is wrong.
Status check_request(const HttpRequest& request);

}  // namespace gpurent::client
