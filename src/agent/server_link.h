// The agent's view of the server: the four /v1/agent routes of model/agent_protocol.h behind an
// interface, so that the reconcile logic is tested against an in-memory server and runs against
// the HTTP one (http_server_link.h).
//
// Errors: kUnavailable (cannot be reached, or a proxy says the server is away) and kInternal (the
// server failed) are worth retrying later, with backoff. kUnauthenticated: the join token or node
// credential was refused. Any other kind is the server refusing this particular request for good
// (e.g. kNotFound for the log of a run it no longer knows). See retryable().
// Not thread-safe: every agent thread owns its own link.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "model/agent_protocol.h"

namespace gpurent::agent {

class ServerLink {
 public:
  virtual ~ServerLink() = default;

  virtual Result<model::RegistrationResult> register_node(
      std::string_view join_token, const model::NodeRegistration& registration) = 0;
  // Watches the node's desired state (GET /v1/agent/desired?watch=true): calls on_desired with
  // each state whose generation is above `after` (then above the one before) as it comes, and
  // with nullopt at least every model::kWatchKeepalive while nothing changes, until on_desired
  // returns false or the server ends the stream (both Ok), or the stream fails (its Error).
  virtual Status watch_desired(
      std::string_view credential, int64_t after,
      const std::function<bool(std::optional<model::DesiredState>)>& on_desired) = 0;
  // Sends bytes that start at `offset` of the run's log; returns the server's size of that log,
  // which is where the next upload starts (the server trims repeats and refuses gaps).
  virtual Result<int64_t> upload_log(std::string_view credential, std::string_view instance_id,
                                     int64_t run, int64_t offset, std::string_view bytes) = 0;
  virtual Status report(std::string_view credential, const model::NodeReport& report) = 0;
  // Writes a complete upload that an instance on this node unpacks (WorkloadSpec::workdir; GET
  // /v1/agent/upload?id=) to `into`, at most model::kMaxWorkdirBytes.
  virtual Status fetch_upload(std::string_view credential, std::string_view upload_id,
                              const std::filesystem::path& into) = 0;
};

// Whether a failed call may succeed later unchanged (as opposed to a refusal of the request).
inline bool retryable(const Error& error) {
  return error.kind == ErrorKind::kUnavailable || error.kind == ErrorKind::kInternal ||
         error.kind == ErrorKind::kUnauthenticated;
}

inline constexpr std::chrono::milliseconds kMinBackoff{250};
inline constexpr std::chrono::milliseconds kMaxBackoff{5000};
inline constexpr std::chrono::seconds kAuthRetry{30};

// How long to wait before the next try after `failures` failed calls in a row (1: the first):
// exponential backoff from kMinBackoff up to kMaxBackoff, and kAuthRetry once the server refused
// the credential (an operator has to act; hammering the server will not help).
inline std::chrono::milliseconds retry_delay(const Error& error, int failures) {
  if (error.kind == ErrorKind::kUnauthenticated) return kAuthRetry;
  const auto doubled = kMinBackoff * (int64_t{1} << std::clamp(failures - 1, 0, 8));
  return std::min<std::chrono::milliseconds>(doubled, kMaxBackoff);
}

// Makes a fresh link for a thread.
using ServerLinkFactory = std::function<Result<std::unique_ptr<ServerLink>>()>;

}  // namespace gpurent::agent
