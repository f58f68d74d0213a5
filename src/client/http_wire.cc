#include "client/http_wire.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/beast/http/verb.hpp>
#include <cctype>

namespace gpurent::client {
namespace {

// Linux's sockaddr_un path limit, terminator excluded.
constexpr size_t kMaxSocketPath = 107;

bool has_line_break(std::string_view text) {
  return text.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

bool is_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

Result<BaseUrl> parse_base_url(std::string_view url) {
  const auto invalid = [url](std::string_view why) {
    return fail(
        Error::invalid("invalid_url", fmt::format("invalid server URL '{}': {}", url, why)));
  };
  std::string_view rest = url;
  bool tls = false;
  if (rest.starts_with("unix://")) {
    BaseUrl parsed;
    parsed.socket_path = std::string(rest.substr(7));
    if (!parsed.socket_path.starts_with('/') || parsed.socket_path.size() > kMaxSocketPath ||
        has_line_break(parsed.socket_path)) {
      return invalid("a unix socket URL is unix:///absolute/path (at most 107 bytes)");
    }
    // Docker and Podman ignore the Host header on their sockets; HTTP/1.1 still wants one.
    parsed.authority = "localhost";
    parsed.base_url = std::string(url);
    return parsed;
  }
  if (const size_t scheme_end = rest.find("://"); scheme_end != std::string_view::npos) {
    std::string scheme(rest.substr(0, scheme_end));
    for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (scheme != "http" && scheme != "https") return invalid("the scheme must be http or https");
    tls = scheme == "https";
    rest.remove_prefix(scheme_end + 3);
  }
  // A bare "/" after the authority is harmless; any other path would be silently dropped.
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    if (rest.substr(slash) != "/") return invalid("a path is not supported");
    rest = rest.substr(0, slash);
  }
  if (rest.find_first_of("?#@ \t\r\n") != std::string_view::npos) {
    return invalid("only http[s]://host:port is supported");
  }
  BaseUrl parsed;
  parsed.tls = tls;
  parsed.authority = std::string(rest);
  std::string_view port;
  if (rest.starts_with('[')) {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return invalid("unterminated IPv6 address");
    parsed.host = std::string(rest.substr(1, close - 1));
    const std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(':')) return invalid("unexpected text after the IPv6 address");
      port = after.substr(1);
    }
  } else {
    if (std::ranges::count(rest, ':') > 1) return invalid("an IPv6 address needs brackets");
    const size_t colon = rest.rfind(':');
    parsed.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
  }
  if (parsed.host.empty()) return invalid("the host is missing");
  if (port.empty()) {
    parsed.port = tls ? "443" : "80";
  } else {
    if (!is_digits(port) || port.size() > 5 || std::stoi(std::string(port)) == 0 ||
        std::stoi(std::string(port)) > 65535) {
      return invalid("the port must be a number from 1 to 65535");
    }
    parsed.port = std::string(port);
  }
  parsed.base_url = (tls ? "https://" : "http://") + parsed.authority;
  return parsed;
}

Status check_request(const HttpRequest& request) {
  if (boost::beast::http::string_to_verb(request.method) == boost::beast::http::verb::unknown) {
    return fail(
        Error::invalid("invalid_request", fmt::format("unknown method '{}'", request.method)));
  }
  if (!request.target.starts_with('/') || has_line_break(request.target) ||
      request.target.find(' ') != std::string::npos) {
    return fail(Error::invalid("invalid_request",
                               fmt::format("invalid request target '{}'", request.target)));
  }
  for (const auto& [name, value] : request.headers) {
    if (name.empty() || has_line_break(name) || has_line_break(value) ||
        name.find_first_of(": ") != std::string::npos) {
      return fail(Error::invalid("invalid_request", fmt::format("invalid header '{}'", name)));
    }
  }
  return {};
}

}  // namespace gpurent::client
