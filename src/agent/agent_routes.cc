#include "agent/agent_routes.h"

#include <fmt/format.h>

#include "client/api_client.h"
#include "common/json.h"
#include "common/url.h"
#include "model/codec.h"
#include "model/desired_state_json.h"

namespace gpurent::agent::routes {
namespace {

// Messages carry text from workloads' specs; an invalid UTF-8 byte must not abort a report.
std::string encode(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

template <class T>
Result<T> decode(const client::HttpResponse& response) {
  GPURENT_TRY(json, parse_json_object(response.body));
  return model::decode_message<T>(json);
}

}  // namespace

Call register_call(const model::NodeRegistration& registration) {
  return {"POST", "/v1/agent/register", encode(Json(registration))};
}

Call watch_call(int64_t after) {
  return {"GET", fmt::format("/v1/agent/desired?after={}&watch=true", after), ""};
}

Call logs_call(std::string_view instance_id, int64_t run, int64_t offset, std::string_view bytes) {
  return {"POST",
          fmt::format("/v1/agent/logs?instance={}&run={}&offset={}", percent_encode(instance_id),
                      run, offset),
          std::string(bytes), "application/octet-stream"};
}

Call upload_call(std::string_view upload_id) {
  return {"GET", fmt::format("/v1/agent/upload?id={}", percent_encode(upload_id)), "", ""};
}

Call report_call(const model::NodeReport& report, Timestamp now) {
  return {"POST", "/v1/agent/report", model::node_report_json(report, to_unix_ms(now))};
}

client::HttpRequest request(Call call, std::string_view bearer) {
  client::HttpRequest request;
  request.method = std::move(call.method);
  request.target = std::move(call.target);
  request.body = std::move(call.body);
  request.content_type = std::move(call.content_type);
  request.headers.emplace_back("Authorization", fmt::format("Bearer {}", bearer));
  return request;
}

Result<model::RegistrationResult> register_answer(const client::HttpResponse& response) {
  if (response.status != 200 && response.status != 201) {
    return fail(client::error_from_response(response, "POST /v1/agent/register"));
  }
  return decode<model::RegistrationResult>(response);
}

Result<int64_t> logs_answer(const client::HttpResponse& response) {
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

Status report_answer(const client::HttpResponse& response) {
  if (response.status != 200) {
    return fail(client::error_from_response(response, "POST /v1/agent/report"));
  }
  return {};
}

Result<std::vector<std::optional<model::DesiredState>>> DesiredStream::feed(
    std::string_view piece) {
  std::vector<std::optional<model::DesiredState>> states;
  for (size_t newline = piece.find('\n'); newline != std::string_view::npos;
       newline = piece.find('\n')) {
    std::string_view line = piece.substr(0, newline);
    if (!partial_.empty()) {
      partial_.append(line);
      line = partial_;
    }
    if (line.empty()) {
      states.emplace_back(std::nullopt);  // a keep-alive
    } else {
      GPURENT_TRY(state, model::read_desired_state(line));
      states.emplace_back(std::move(state));
    }
    partial_.clear();
    piece.remove_prefix(newline + 1);
  }
  if (partial_.size() + piece.size() > client::kMaxResponseBodyBytes) {
    return fail(Error::invalid("invalid_message", "a desired state in the stream is too long"));
  }
  partial_.append(piece);
  return states;
}

Result<std::optional<model::DesiredState>> DesiredStream::finish() {
  if (partial_.empty()) return std::optional<model::DesiredState>();
  GPURENT_TRY(state, model::read_desired_state(partial_));
  partial_.clear();
  return std::optional<model::DesiredState>(std::move(state));
}

bool DesiredWatch::piece(std::string_view piece) {
  auto states = stream_.feed(piece);
  if (!states) {
    broken_ = std::move(states).error();
    return false;
  }
  for (auto& state : *states) {
    if (!on_desired_(std::move(state))) {
      stopped_ = true;
      return false;
    }
  }
  return true;
}

Status DesiredWatch::end(const client::HttpResponse& response) {
  if (broken_) return fail(*broken_);
  if (response.status != 200) {
    return fail(client::error_from_response(response, "GET /v1/agent/desired"));
  }
  if (stopped_) return {};
  GPURENT_TRY(last, stream_.finish());
  if (last) on_desired_(std::move(last));
  return {};
}

}  // namespace gpurent::agent::routes
