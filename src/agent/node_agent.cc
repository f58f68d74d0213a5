#include "agent/node_agent.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "agent/reconciler.h"

namespace gpurent::agent {
namespace {

// Between two long-polls, even when a misbehaving server answers at once.
constexpr std::chrono::milliseconds kMinPollInterval{100};

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

int64_t memory_mb() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemTotal:") return kib / 1024;
    meminfo.ignore(64, '\n');
  }
  return 0;
}

// One thread's view of the server: when to try again, and a log line only when the state changes
// (a server down for an hour yields two lines, not thousands).
class ServerHealth {
 public:
  explicit ServerHealth(std::string_view channel) : channel_(channel) {}

  void succeeded() {
    if (!last_code_.empty()) {
      spdlog::info("server_ok channel={} after_failures={}", channel_, failures_);
    }
    failures_ = 0;
    last_code_.clear();
  }

  // Returns how long to wait before the next try.
  std::chrono::milliseconds failed(const Error& error) {
    failures_ = std::min(failures_ + 1, 30);
    if (error.code != last_code_) {
      last_code_ = error.code;
      if (error.kind == ErrorKind::kUnavailable) {
        spdlog::warn("server_unreachable channel={} code={} error=\"{}\"", channel_, error.code,
                     error.message);
      } else {
        spdlog::error("server_refused channel={} code={} error=\"{}\"", channel_, error.code,
                      error.message);
      }
    }
    if (error.kind == ErrorKind::kUnauthenticated) return kAuthRetry;
    const auto doubled = kMinBackoff * (int64_t{1} << std::min(failures_ - 1, 8));
    return std::min<std::chrono::milliseconds>(doubled, kMaxBackoff);
  }

 private:
  std::string channel_;
  std::string last_code_;  // empty while calls succeed
  int failures_ = 0;
};

}  // namespace

NodeAgent::NodeAgent(AgentOptions options, ServerLinkFactory links, std::string shim_executable)
    : options_(std::move(options)),
      links_(std::move(links)),
      shim_executable_(std::move(shim_executable)) {}

NodeAgent::~NodeAgent() { stop(); }

std::string NodeAgent::node_id() const {
  std::lock_guard lock(mutex_);
  return identity_ ? identity_->node_id : std::string();
}

model::NodeRegistration NodeAgent::registration() const {
  model::NodeRegistration registration;
  registration.name = options_.node_name.empty() ? host_name() : options_.node_name;
  registration.gpus = inventory_.gpus;
  registration.cpu_count = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  registration.memory_mb = memory_mb();
  registration.simulated = inventory_.simulated;
  registration.agent_version = std::string(kAgentVersion);
  return registration;
}

Status NodeAgent::register_node(ServerLink& link) {
  GPURENT_TRY(result, link.register_node(options_.join_token, registration()));
  Identity identity{result.node_id, result.credential};
  if (auto saved = save_identity(options_.data_dir, identity); !saved) return saved;
  spdlog::info("node_registered node={} gpus={} simulated={}", identity.node_id,
               inventory_.gpus.size(), inventory_.simulated);
  {
    std::lock_guard lock(mutex_);
    identity_ = std::move(identity);
  }
  changed_.notify_all();
  return {};
}

Status NodeAgent::start() {
  {
    std::lock_guard lock(mutex_);
    if (started_) return fail(Error::conflict("agent_started", "the agent was already started"));
    started_ = true;
  }
  std::error_code ec;
  std::filesystem::create_directories(options_.data_dir, ec);
  if (ec) {
    return fail(Error::internal(
        fmt::format("cannot create the data directory {}: {}", options_.data_dir, ec.message())));
  }
  GPURENT_TRY(inventory, discover_gpus(options_.sim_gpus, options_.data_dir));
  inventory_ = std::move(inventory);
  GPURENT_TRY(runtime,
              ProcessRuntime::open({options_.data_dir, shim_executable_, options_.stop_grace}));
  runtime_ = std::move(runtime);
  GPURENT_TRY(poll_link, links_());
  GPURENT_TRY(reconcile_link, links_());

  if (auto identity = load_identity(options_.data_dir)) {
    spdlog::info("node_identity node={} file={}", identity->node_id,
                 (std::filesystem::path(options_.data_dir) / kIdentityFile).string());
    std::lock_guard lock(mutex_);
    identity_ = std::move(*identity);
  } else if (identity.error().code != "file_not_found") {
    return fail(std::move(identity).error());
  } else if (options_.join_token.empty()) {
    return fail(
        Error::invalid("join_token_required",
                       fmt::format("{} has no node identity; give a join token for the first start",
                                   options_.data_dir)));
  } else if (auto registered = register_node(*poll_link); !registered) {
    // Only a server that cannot be reached is worth waiting for; a refusal of the token is final.
    if (registered.error().kind != ErrorKind::kUnavailable) return registered;
    spdlog::warn("node_register_deferred error=\"{}\"", registered.error().message);
  }

  poller_ = std::thread(&NodeAgent::poll_loop, this, std::move(poll_link));
  reconciler_ = std::thread(&NodeAgent::reconcile_loop, this, std::move(reconcile_link));
  spdlog::info("agent_started node={} server={} data_dir={} gpus={} simulated={}", node_id(),
               options_.server_url, options_.data_dir, inventory_.gpus.size(),
               inventory_.simulated);
  return {};
}

void NodeAgent::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  changed_.notify_all();
  if (reconciler_.joinable()) reconciler_.join();
  if (poller_.joinable()) poller_.join();
  if (runtime_) spdlog::info("agent_stopped node={}", node_id());
}

bool NodeAgent::sleep_until(SteadyTime until) {
  std::unique_lock lock(mutex_);
  return !changed_.wait_until(lock, until, [this] { return stopping_; });
}

void NodeAgent::poll_loop(std::unique_ptr<ServerLink> link) {
  ServerHealth health("desired");
  int64_t generation = 0;  // 0: answer at once with whatever the server has
  while (true) {
    const auto began = std::chrono::steady_clock::now();
    std::optional<Identity> identity;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      identity = identity_;
    }
    if (!identity) {
      if (auto registered = register_node(*link); !registered) {
        if (!sleep_until(began + health.failed(registered.error()))) return;
      } else {
        health.succeeded();
      }
      continue;
    }
    auto desired = link->wait_desired(identity->credential, generation, kDesiredWait);
    if (!desired) {
      if (!sleep_until(began + health.failed(desired.error()))) return;
      continue;
    }
    health.succeeded();
    if (desired->generation != generation) {
      generation = desired->generation;
      {
        std::lock_guard lock(mutex_);
        desired_ = std::move(*desired);
        desired_pending_ = true;
      }
      changed_.notify_all();
    }
    if (!sleep_until(began + kMinPollInterval)) return;
  }
}

void NodeAgent::reconcile_loop(std::unique_ptr<ServerLink> link) {
  Reconciler reconciler(*runtime_);
  ServerHealth health("report");
  std::optional<model::DesiredState> desired;  // the one being converged to
  SteadyTime retry_at{};
  while (true) {
    std::optional<Identity> identity;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      if (desired_pending_) {
        desired = desired_;
        desired_pending_ = false;
      }
      identity = identity_;
    }
    runtime_->poll();
    // Nothing is stopped before the first desired state: after a restart, the runs the agent
    // re-adopted may well still be wanted.
    if (desired) reconciler.converge(*desired);
    auto now = std::chrono::steady_clock::now();
    if (identity && now >= retry_at) {
      if (auto synced = reconciler.sync(*link, identity->credential); synced) {
        health.succeeded();
      } else {
        retry_at = now + health.failed(synced.error());
      }
      now = std::chrono::steady_clock::now();
    }
    auto wake_at = now + options_.report_interval;
    if (const auto deadline = runtime_->next_deadline()) wake_at = std::min(wake_at, *deadline);
    std::unique_lock lock(mutex_);
    changed_.wait_until(lock, wake_at, [this] { return stopping_ || desired_pending_; });
  }
}

}  // namespace gpurent::agent
