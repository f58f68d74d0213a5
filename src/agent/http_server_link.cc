#include "agent/http_server_link.h"

#include <fmt/format.h>

#include <fstream>

#include "agent/agent_routes.h"
#include "client/api_client.h"
#include "client/http_client.h"
#include "common/clock.h"

namespace gpurent::agent {
namespace {

class HttpServerLink final : public ServerLink {
 public:
  explicit HttpServerLink(client::HttpClient http) : http_(std::move(http)) {}

  Result<model::RegistrationResult> register_node(
      std::string_view join_token, const model::NodeRegistration& registration) override {
    GPURENT_TRY(response, send(routes::register_call(registration), join_token, kHttpSlack));
    return routes::register_answer(response);
  }

  Status watch_desired(
      std::string_view credential, int64_t after,
      const std::function<bool(std::optional<model::DesiredState>)>& on_desired) override {
    routes::DesiredWatch watch(on_desired);
    GPURENT_TRY(response, http_.stream(
                              routes::request(routes::watch_call(after), credential),
                              [&](std::string_view piece) { return watch.piece(piece); },
                              model::kWatchKeepalive + kHttpSlack));
    return watch.end(response);
  }

  Result<int64_t> upload_log(std::string_view credential, std::string_view instance_id, int64_t run,
                             int64_t offset, std::string_view bytes) override {
    GPURENT_TRY(response,
                send(routes::logs_call(instance_id, run, offset, bytes), credential, kHttpSlack));
    return routes::logs_answer(response);
  }

  Status fetch_upload(std::string_view credential, std::string_view upload_id,
                      const std::filesystem::path& into) override {
    std::ofstream out(into, std::ios::binary | std::ios::trunc);
    int64_t written = 0;
    GPURENT_TRY(response, http_.stream(routes::request(routes::upload_call(upload_id), credential),
                                       [&](std::string_view piece) {
                                         written += static_cast<int64_t>(piece.size());
                                         if (written > model::kMaxWorkdirBytes) return false;
                                         out.write(piece.data(),
                                                   static_cast<std::streamsize>(piece.size()));
                                         return static_cast<bool>(out);
                                       }));
    if (response.status != 200) {
      return fail(client::error_from_response(response, "GET /v1/agent/upload"));
    }
    if (!out.flush() || written > model::kMaxWorkdirBytes) {
      return fail(
          Error::internal(fmt::format("cannot write upload {} to {}", upload_id, into.string())));
    }
    return {};
  }

  Status report(std::string_view credential, const model::NodeReport& report) override {
    GPURENT_TRY(response,
                send(routes::report_call(report, wall_clock_.now()), credential, kHttpSlack));
    return routes::report_answer(response);
  }

 private:
  Result<client::HttpResponse> send(routes::Call call, std::string_view bearer,
                                    std::chrono::milliseconds timeout) {
    return http_.send(routes::request(std::move(call), bearer), timeout);
  }

  client::HttpClient http_;
  const SystemClock wall_clock_;  // reports' send times
};

}  // namespace

Result<std::unique_ptr<ServerLink>> make_http_server_link(std::string_view server_url,
                                                          const client::TlsOptions& tls) {
  GPURENT_TRY(http, client::HttpClient::create(server_url, tls));
  return std::unique_ptr<ServerLink>(std::make_unique<HttpServerLink>(std::move(http)));
}

}  // namespace gpurent::agent
