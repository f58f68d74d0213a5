// The HTTP form of the agent protocol (model/agent_protocol.h): each route's method, target and
// body, and how its answer becomes a value or an Error. Shared by the blocking link of the
// single-node agent (http_server_link.cc) and the asynchronous one of the simulated fleet
// (sim_fleet.cc), so the two cannot drift apart. Transport is the caller's; so is the bearer token
// (the join token for register, the node credential for the rest). Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "client/http_client.h"
#include "common/clock.h"
#include "common/result.h"
#include "model/agent_protocol.h"

namespace gpurent::agent::routes {

struct Call {
  std::string method;
  std::string target;
  std::string body;
  std::string content_type = "application/json";
};

Call register_call(const model::NodeRegistration& registration);
Call desired_call(int64_t after, std::chrono::seconds wait);
Call logs_call(std::string_view instance_id, int64_t run, int64_t offset, std::string_view bytes);
// Stamps the report's sent_at_ms with `now` (the agent's wall clock, read just before sending).
Call report_call(const model::NodeReport& report, Timestamp now);

// Each answer: the route's value for its success status; client::error_from_response's Error for
// any other status; code "invalid_message" for a success answer that does not decode.
Result<model::RegistrationResult> register_answer(const client::HttpResponse& response);
Result<model::DesiredState> desired_answer(const client::HttpResponse& response);
// The server's size of the run's log. A 409 carries it too (the upload began past the server's
// end), so it is a value here: the caller resends from there.
Result<int64_t> logs_answer(const client::HttpResponse& response);
Status report_answer(const client::HttpResponse& response);

}  // namespace gpurent::agent::routes
