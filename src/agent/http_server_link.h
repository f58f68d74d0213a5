// ServerLink over HTTP (client::HttpClient): the link `gpurent agent` uses.
//
// Each link owns one HttpClient (one keep-alive connection), so it belongs to one thread.
// Deadlines: a watch may go model::kWatchKeepalive plus kHttpSlack without a byte; every other
// call kHttpSlack.
#pragma once

#include <chrono>
#include <string_view>

#include "agent/server_link.h"
#include "client/http_client.h"

namespace gpurent::agent {

inline constexpr std::chrono::seconds kHttpSlack{10};

// Fails only for a malformed URL or unusable TLS files; the server is not contacted until the
// first call.
Result<std::unique_ptr<ServerLink>> make_http_server_link(std::string_view server_url,
                                                          const client::TlsOptions& tls = {});

}  // namespace gpurent::agent
