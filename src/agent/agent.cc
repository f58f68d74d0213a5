#include "agent/agent.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <string.h>

#include "agent/http_server_link.h"
#include "agent/node_agent.h"

namespace gpurent::agent {

struct Agent::Impl {
  explicit Impl(AgentOptions options)
      : node(options, [url = options.server_url] { return make_http_server_link(url); }) {}
  NodeAgent node;
};

Agent::Agent(AgentOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Agent::~Agent() = default;  // NodeAgent's destructor stops the threads

Status Agent::start() { return impl_->node.start(); }

void Agent::stop() { impl_->node.stop(); }

std::string Agent::node_id() const { return impl_->node.node_id(); }

int run_agent(const AgentOptions& options) {
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
