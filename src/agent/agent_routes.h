// The HTTP form of the agent protocol (model/agent_protocol.h): each route's method, target and
// body, and how its answer becomes a value or an Error. Shared by the blocking link of the
// single-node agent (http_server_link.cc) and the asynchronous one of the simulated fleet
// (sim_fleet.cc), so the two cannot drift apart. Transport is the caller's; so is the bearer token
// (the join token for register, the node credential for the rest). Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
// The desired-state watch (model/agent_protocol.h): read its body with a DesiredStream.
Call watch_call(int64_t after);
Call logs_call(std::string_view instance_id, int64_t run, int64_t offset, std::string_view bytes);
Call upload_call(std::string_view upload_id);
// Stamps the report's sent_at_ms with `now` (the agent's wall clock, read just before sending).
Call report_call(const model::NodeReport& report, Timestamp now);

// The call as the request either HTTP client sends, with the bearer token.
client::HttpRequest request(Call call, std::string_view bearer);

// Each answer: the route's value for its success status; client::error_from_response's Error for
// any other status; code "invalid_message" for a success answer that does not decode.
Result<model::RegistrationResult> register_answer(const client::HttpResponse& response);
// The server's size of the run's log. A 409 carries it too (the upload began past the server's
// end), so it is a value here: the caller resends from there.
Result<int64_t> logs_answer(const client::HttpResponse& response);
Status report_answer(const client::HttpResponse& response);

// The body of a desired-state watch, split into its lines as it arrives in pieces of any size:
// feed() returns the desired states of the lines each piece completes, in order, with nullopt
// for each keep-alive line (so that a reader hears from the stream at least every
// kWatchKeepalive). Errors: "invalid_message" for a line that does not decode, or one longer
// than client::kMaxResponseBodyBytes; the stream is then unusable. finish() takes what is left
// at the stream's end: a last line without its newline (a server that answered the request as a
// long poll sends one document), else nothing.
class DesiredStream {
 public:
  Result<std::vector<std::optional<model::DesiredState>>> feed(std::string_view piece);
  Result<std::optional<model::DesiredState>> finish();

 private:
  std::string partial_;  // the line begun and not yet ended
};

// A client's reading of one desired-state watch, shared by the blocking and the asynchronous
// link: piece() takes each piece of the body as it arrives and calls on_desired for each of its
// lines (a state, or nullopt for a keep-alive); it returns false once reading should stop
// (on_desired said so, or a line did not decode). end() then says how the watch went: Ok when
// on_desired stopped it or the server ended it (a last document without its newline, from a
// server that answered as a long poll, is handed over first); else the broken line's Error, or
// the server's for an answer other than 200.
class DesiredWatch {
 public:
  using OnDesired = std::function<bool(std::optional<model::DesiredState>)>;
  explicit DesiredWatch(OnDesired on_desired) : on_desired_(std::move(on_desired)) {}

  bool piece(std::string_view piece);
  Status end(const client::HttpResponse& response);

 private:
  DesiredStream stream_;
  OnDesired on_desired_;
  std::optional<Error> broken_;
  bool stopped_ = false;
};

}  // namespace gpurent::agent::routes
