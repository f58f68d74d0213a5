#include "agent/http_server_link.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdint>

#include "client/api_client.h"
#include "client/http_client.h"
#include "common/json.h"

namespace gpurent::agent {
namespace {

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
      return fail(client::error_from_response(response, "POST /v1/agent/register"));
    }
    return decode<model::RegistrationResult>(response);
  }

  Result<model::DesiredState> wait_desired(std::string_view credential, int64_t after,
                                           std::chrono::seconds wait) override {
    GPURENT_TRY(
        response,
        send("GET", fmt::format("/v1/agent/desired?after={}&wait_s={}", after, wait.count()),
             credential, "", "application/json", wait + kHttpSlack));
    if (response.status != 200) {
      return fail(client::error_from_response(response, "GET /v1/agent/desired"));
    }
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
      return fail(client::error_from_response(response, "POST /v1/agent/logs"));
    }
    auto json = parse_json_object(response.body);
    auto size =
        json ? required_int(*json, "size", 0, INT64_MAX) : Result<int64_t>(fail(json.error()));
    if (!size) {
      return fail(response.status == 409
                      ? client::error_from_response(response, "POST /v1/agent/logs")
                      : size.error());
    }
    return *size;
  }

  Status report(std::string_view credential, const model::NodeReport& report) override {
    GPURENT_TRY(response, send("POST", "/v1/agent/report", credential, Json(report).dump(),
                               "application/json", kHttpSlack));
    if (response.status != 200) {
      return fail(client::error_from_response(response, "POST /v1/agent/report"));
    }
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
