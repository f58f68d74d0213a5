#include "client/api_transport.h"

#include <fmt/format.h>

#include "common/url.h"

namespace gpurent::client {
namespace {

constexpr int kPageSize = 500;  // the API's largest page
constexpr size_t kMaxErrorSnippet = 200;

ErrorKind kind_for_status(int status) {
  switch (status) {
    case 400:
      return ErrorKind::kInvalidArgument;
    case 401:
      return ErrorKind::kUnauthenticated;
    case 402:
      return ErrorKind::kPaymentRequired;
    case 403:
      return ErrorKind::kPermissionDenied;
    case 404:
      return ErrorKind::kNotFound;
    case 405:
      return ErrorKind::kMethodNotAllowed;
    case 409:
      return ErrorKind::kConflict;
    case 413:
      return ErrorKind::kPayloadTooLarge;
    case 422:
      return ErrorKind::kUnprocessable;
    // A proxy in front of a server that is down or restarting.
    case 502:
    case 503:
    case 504:
      return ErrorKind::kUnavailable;
    default:
      return status >= 500 || status < 400 ? ErrorKind::kInternal : ErrorKind::kInvalidArgument;
  }
}

// The first line of a body that is not a problem document, cut short and without control
// characters, so an HTML error page of a proxy still says something readable.
std::string snippet(std::string_view body) {
  std::string out;
  for (const char c : body.substr(0, body.find('\n'))) {
    if (out.size() == kMaxErrorSnippet) {
      out += "...";
      break;
    }
    out.push_back(static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c);
  }
  return out;
}

}  // namespace

namespace detail {

std::string encode(std::string_view text) { return percent_encode(text); }

void add_query(std::string& query, std::string_view key, std::string_view value) {
  if (value.empty()) return;
  if (!query.empty()) query.push_back('&');
  query += fmt::format("{}={}", key, encode(value));
}

std::string string_field(const Json& object, std::string_view key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Error bad_response(std::string_view request, std::string_view why) {
  return {ErrorKind::kInternal, "bad_response", fmt::format("{}: {}", request, why)};
}

}  // namespace detail

using detail::add_query;
using detail::bad_response;
using detail::string_field;

Error error_from_response(const HttpResponse& response, std::string_view request) {
  const ErrorKind kind = kind_for_status(response.status);
  // The body decides, not the Content-Type: stream() cannot tell the caller the latter, and a
  // problem document is recognisable by itself.
  const Json problem = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (problem.is_object()) {
    std::string code = string_field(problem, "code");
    std::string detail = string_field(problem, "detail");
    if (detail.empty()) detail = string_field(problem, "title");
    if (!code.empty() || !detail.empty()) {
      if (code.empty()) code = fmt::format("http_{}", response.status);
      if (detail.empty()) detail = fmt::format("{} answered HTTP {}", request, response.status);
      return {kind, std::move(code), std::move(detail)};
    }
  }
  const std::string text = snippet(response.body);
  return {kind, fmt::format("http_{}", response.status),
          fmt::format("{} answered HTTP {}{}{}", request, response.status, text.empty() ? "" : ": ",
                      text)};
}

void ApiTransport::authorize(HttpRequest& request) const {
  if (!api_key_.empty()) request.headers.emplace_back("Authorization", "Bearer " + api_key_);
}

Result<HttpResponse> ApiTransport::send(HttpRequest request, std::chrono::milliseconds timeout) {
  authorize(request);
  return http_.send(request, timeout);
}

Result<HttpResponse> ApiTransport::stream(HttpRequest request,
                                          const std::function<bool(std::string_view)>& on_chunk,
                                          std::chrono::milliseconds idle_timeout) {
  authorize(request);
  return http_.stream(request, on_chunk, idle_timeout);
}

Result<HttpResponse> ApiTransport::tunnel(HttpRequest request, int in_fd, int out_fd) {
  authorize(request);
  return http_.tunnel(request, in_fd, out_fd, kCallTimeout);
}

Result<Json> ApiTransport::call(std::string_view method, std::string target, const Json* body,
                                std::string_view idempotency_key, std::chrono::seconds timeout) {
  HttpRequest request{.method = std::string(method), .target = std::move(target)};
  if (body != nullptr) {
    request.body = body->dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  authorize(request);
  if (!idempotency_key.empty()) {
    request.headers.emplace_back("Idempotency-Key", std::string(idempotency_key));
  }
  request.headers.emplace_back("Accept", "application/json");
  GPURENT_TRY(response, http_.send(request, timeout));
  const std::string what = fmt::format("{} {}{}", method, base_url(), request.target);
  if (response.status < 200 || response.status >= 300) {
    return fail(error_from_response(response, what));
  }
  if (response.body.empty()) return Json::object();
  auto parsed = parse_json_object(response.body);
  if (!parsed) return fail(bad_response(what, parsed.error().message));
  return std::move(*parsed);
}

Result<Json> ApiTransport::fetch_all_pages(std::string_view path, const std::string& query) {
  Json joined;
  std::string cursor;
  for (int page = 0; page < kMaxListPages; ++page) {
    std::string page_query = fmt::format("limit={}", kPageSize);
    if (!query.empty()) page_query += "&" + query;
    add_query(page_query, "cursor", cursor);
    GPURENT_TRY(body, call("GET", fmt::format("{}?{}", path, page_query)));
    const auto items = body.find("items");
    if (items == body.end() || !items->is_array()) {
      return fail(bad_response(fmt::format("GET {}{}", base_url(), path), "the list has no items"));
    }
    cursor = string_field(body, "next_cursor");
    if (page == 0) {
      joined = std::move(body);
    } else {
      for (auto& item : *items) joined["items"].push_back(std::move(item));
    }
    if (cursor.empty()) {
      joined["next_cursor"] = nullptr;
      return joined;
    }
  }
  return fail(Error{ErrorKind::kInternal, "list_too_long",
                    fmt::format("GET {}{}: more than {} pages of {} items", base_url(), path,
                                kMaxListPages, kPageSize)});
}

Result<Json> ApiTransport::list_items(std::string_view path, const std::string& query) {
  GPURENT_TRY(joined, fetch_all_pages(path, query));
  return std::move(joined["items"]);
}

Status ApiTransport::stream_text(std::string target, bool follow,
                                 const std::function<bool(std::string_view)>& on_chunk) {
  HttpRequest request{.target = std::move(target)};
  authorize(request);
  const auto idle = follow ? std::chrono::milliseconds(kFollowIdleTimeout)
                           : std::chrono::milliseconds(kCallTimeout);
  GPURENT_TRY(answer, http_.stream(request, on_chunk, idle));
  if (answer.status >= 300) {
    return fail(error_from_response(answer, fmt::format("GET {}{}", base_url(), request.target)));
  }
  return {};
}

}  // namespace gpurent::client
