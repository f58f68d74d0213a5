#include "agent/agent.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <string.h>

#include <algorithm>
#include <cctype>

#include "agent/http_server_link.h"
#include "agent/node_agent.h"
#include "agent/sim_fleet.h"

namespace gpurent::agent {

struct Agent::Impl {
  explicit Impl(const AgentOptions& options)
      : node(options, [url = options.server_url, tls = options.tls] {
          return make_http_server_link(url, tls);
        }) {}
  NodeAgent node;
};

Agent::Agent(const AgentOptions& options) : impl_(std::make_unique<Impl>(options)) {}

Agent::~Agent() = default;  // NodeAgent's destructor stops the threads

Status Agent::start() { return impl_->node.start(); }

void Agent::stop() { impl_->node.stop(); }

std::string Agent::node_id() const { return impl_->node.node_id(); }

bool valid_advertise_address(std::string_view text) {
  return !text.empty() && text.size() <= 253 && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':';
  });
}

Result<std::pair<std::string, std::string>> parse_label(std::string_view text) {
  const auto allowed = [](std::string_view part, size_t max, std::string_view extra) {
    return part.size() <= max && std::all_of(part.begin(), part.end(), [&](char c) {
             return std::isalnum(static_cast<unsigned char>(c)) ||
                    std::string_view("._/-").find(c) != std::string_view::npos ||
                    extra.find(c) != std::string_view::npos;
           });
  };
  const size_t equals = text.find('=');
  const std::string_view key = text.substr(0, equals);
  const std::string_view value =
      equals == std::string_view::npos ? std::string_view() : text.substr(equals + 1);
  if (equals == std::string_view::npos || key.empty() || !allowed(key, 63, "") ||
      !allowed(value, 253, ":")) {
    return fail(Error::invalid(
        "invalid_label",
        fmt::format("'{}' is not KEY=VALUE (KEY: 1-63 of A-Z a-z 0-9 . _ / -; VALUE: up to 253 of "
                    "those and ':')",
                    text)));
  }
  return std::pair{std::string(key), std::string(value)};
}

int run_agent(const AgentOptions& options) {
  if (options.sim_nodes > 0) return run_sim_fleet(options);
  // Blocked before any thread starts, so that every thread inherits the mask and the signals wait
  // for sigwait below instead of killing the process. The runtime unblocks them for workloads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &signals, &previous);

  int status = 0;
  {
    Agent agent(options);
    if (auto started = agent.start(); !started) {
      spdlog::error("agent_start_failed code={} error=\"{}\"", started.error().code,
                    started.error().message);
      status = 1;
    } else {
      int signal = 0;
      sigwait(&signals, &signal);
      spdlog::info("agent_signal signal={}", sigabbrev_np(signal));
      agent.stop();
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return status;
}

}  // namespace gpurent::agent
