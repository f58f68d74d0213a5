#include "server/api_http.h"

#include <charconv>

#include <fmt/format.h>

namespace gpurent::server {

Json whole_list(Json items) { return {{"items", std::move(items)}, {"next_cursor", nullptr}}; }

Response json_response(int status, const Json& body) {
  return Response{status, "application/json", body.dump(), {}, {}};
}

Error unauthenticated(std::string_view why) {
  return {ErrorKind::kUnauthenticated, "unauthenticated", std::string(why)};
}

std::optional<std::string_view> bearer_token(const Request& request) {
  constexpr std::string_view kPrefix = "Bearer ";
  std::string_view header = request.authorization;
  if (!header.starts_with(kPrefix)) return std::nullopt;
  header.remove_prefix(kPrefix.size());
  if (header.empty() || header.size() > 256) return std::nullopt;
  return header;
}

Result<int64_t> query_int(const Request& request, const std::string& name, int64_t fallback,
                          int64_t min, int64_t max) {
  const auto it = request.query.find(name);
  if (it == request.query.end() || it->second.empty()) return fallback;
  int64_t value = 0;
  const auto* end = it->second.data() + it->second.size();
  const auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
  if (ec != std::errc() || ptr != end || value < min || value > max) {
    return fail(
        Error::invalid("invalid_query", fmt::format("query parameter '{}' must be an integer "
                                                    "between {} and {}",
                                                    name, min, max)));
  }
  return value;
}

std::optional<std::string> query_string(const Request& request, const std::string& name) {
  const auto it = request.query.find(name);
  if (it == request.query.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

Result<std::optional<std::string>> idempotency_key(const Request& request) {
  if (request.idempotency_key.empty()) return std::optional<std::string>();
  if (request.idempotency_key.size() > 128) {
    return fail(Error::invalid("invalid_header", "Idempotency-Key is longer than 128 characters"));
  }
  return std::optional<std::string>(request.idempotency_key);
}

Response created_response(const Json& view, std::string location, bool replayed) {
  Response response = json_response(201, view);
  response.headers.emplace_back("Location", std::move(location));
  if (replayed) response.headers.emplace_back("Idempotent-Replayed", "true");
  return response;
}

Result<bool> query_flag(const Request& request, const std::string& name, bool fallback) {
  const auto value = query_string(request, name);
  if (!value) return fallback;
  if (*value == "1" || *value == "true") return true;
  if (*value == "0" || *value == "false") return false;
  return fail(Error::invalid("invalid_query",
                             fmt::format("query parameter '{}' must be true or false", name)));
}

}  // namespace gpurent::server
