#include "agent/http_server_link.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdint>

#include "client/http_client.h"
#include "common/json.h"

namespace gpurent::agent {
namespace {

ErrorKind kind_for_status(int status) {
  if (status >= 500) return ErrorKind::kUnavailable;  // the server's trouble: try again later
  switch (status) {
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
    default:
      return ErrorKind::kInvalidArgument;
  }
}

// An error response as an Error, keeping the problem document's stable code when there is one.
Error error_from(const client::HttpResponse& response, std::string_view route) {
  std::string code = fmt::format("http_{}", response.status);
  std::string detail;
  if (auto problem = parse_json_object(response.body)) {
    if (auto c = optional_string(*problem, "code", 128); c && *c) code = **c;
    if (auto d = optional_string(*problem, "detail", 1024); d && *d) detail = **d;
  }
  return {kind_for_status(response.status), std::move(code),
          fmt::format("{} answered {}{}{}", route, response.status, detail.empty() ? "" : ": ",
                      detail)};
}

template <class T>
Result<T> decode(const client::HttpResponse& response) {
  GPURENT_TRY(json, parse_json_object(response.body));
  return model::decode_message<T>(json);
}

// Percent-encodes a query parameter value (RFC 3986 unreserved characters stay as they are).
std::string query_escape(std::string_view value) {
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

class HttpServerLink final : public ServerLink {
 public:
  explicit HttpServerLink(client::HttpClient http) : http_(std::move(http)) {}

  Result<model::RegistrationResult> register_node(
      std::string_view join_token, const model::NodeRegistration& registration) override {
    GPURENT_TRY(response, send("POST", "/v1/agent/register", join_token, Json(registration).dump(),
                               "application/json", kHttpSlack));
    if (response.status != 200 && response.status != 201) {
      return fail(error_from(response, "register"));
    }
    return decode<model::RegistrationResult>(response);
  }

  Result<model::DesiredState> wait_desired(std::string_view credential, int64_t after,
                                           std::chrono::seconds wait) override {
    GPURENT_TRY(
        response,
        send("GET", fmt::format("/v1/agent/desired?after={}&wait_s={}", after, wait.count()),
             credential, "", "application/json", wait + kHttpSlack));
    if (response.status != 200) return fail(error_from(response, "desired"));
    return decode<model::DesiredState>(response);
  }

  Result<int64_t> upload_log(std::string_view credential, std::string_view instance_id, int64_t run,
                             int64_t offset, std::string_view bytes) override {
    GPURENT_TRY(response,
                send("POST",
                     fmt::format("/v1/agent/logs?instance={}&run={}&offset={}",
                                 query_escape(instance_id), run, offset),
                     credential, std::string(bytes), "application/octet-stream", kHttpSlack));
    // 409 carries the size too: the upload started past the server's end, resend from there.
    if (response.status != 200 && response.status != 409) {
      return fail(error_from(response, "logs"));
    }
    auto json = parse_json_object(response.body);
    auto size =
        json ? required_int(*json, "size", 0, INT64_MAX) : Result<int64_t>(fail(json.error()));
    if (!size) return fail(response.status == 409 ? error_from(response, "logs") : size.error());
    return *size;
  }

  Status report(std::string_view credential, const model::NodeReport& report) override {
    GPURENT_TRY(response, send("POST", "/v1/agent/report", credential, Json(report).dump(),
                               "application/json", kHttpSlack));
    if (response.status != 200) return fail(error_from(response, "report"));
    return {};
  }

 private:
  Result<client::HttpResponse> send(std::string method, std::string target, std::string_view bearer,
                                    std::string body, std::string content_type,
                                    std::chrono::milliseconds timeout) {
    client::HttpRequest request;
    request.method = std::move(method);
    request.target = std::move(target);
    request.body = std::move(body);
    request.content_type = std::move(content_type);
    request.headers.emplace_back("Authorization", fmt::format("Bearer {}", bearer));
    return http_.send(request, timeout);
  }

  client::HttpClient http_;
};

}  // namespace

Result<std::unique_ptr<ServerLink>> make_http_server_link(std::string_view server_url) {
  GPURENT_TRY(http, client::HttpClient::create(server_url));
  return std::unique_ptr<ServerLink>(std::make_unique<HttpServerLink>(std::move(http)));
}

}  // namespace gpurent::agent
