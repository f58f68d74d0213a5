// Boost.Asio on C++20 coroutines (its headers are among the slowest of the build; Beast's stay in
// client/async_http.cc). Every node is two coroutines on one io_context: the watcher and the
// reporter. Blocking file work runs on a small thread pool and is awaited as an asynchronous
// operation (net::await_on). GCC 12 miscompiles some co_await forms (a capturing lambda as a
// temporary in the awaited expression, co_await in a loop condition), so every co_await here stands
// alone.
#include <utility>  // before Asio: Boost 1.74 with C++20 coroutines needs it

#include "agent/sim_fleet.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <string.h>
#include <sys/resource.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "agent/agent_routes.h"
#include "agent/gpu/discovery.h"
#include "agent/gpu/sim_gpus.h"
#include "agent/host.h"
#include "agent/http_server_link.h"
#include "agent/identity.h"
#include "agent/node_agent.h"
#include "agent/sim_workloads.h"
#include "agent/telemetry/sim_faults.h"
#include "agent/telemetry/sim_source.h"
#include "agent/telemetry/telemetry.h"
#include "client/async_http.h"
#include "common/clock.h"
#include "common/heap_headroom.h"
#include "common/random.h"
#include "net/await_on.h"

namespace gpurent::agent {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;
using SteadyTime = SteadyClock::time_point;

constexpr auto kAwaitable = asio::use_awaitable;
// Open files besides the connections: the data directory's, the resolver's, the log's.
constexpr rlim_t kSpareFiles = 64;

Error stopped_error() {
  return {ErrorKind::kUnavailable, "agent_stopping", "the agent is stopping"};
}

// Call failures of the whole fleet, logged when a kind of failure starts and then counted, so
// that thousands of nodes failing alike make a few lines.
class FailureLog {
 public:
  void note(std::string_view channel, const Error& error) {
    auto [entry, fresh] = entries_.try_emplace({std::string(channel), error.code});
    if (fresh) {
      spdlog::warn("sim_fleet_call_failed channel={} code={} error=\"{}\"", channel, error.code,
                   error.message);
    }
    ++entry->second.count;
    entry->second.last_message = error.message;
  }

  // Logs what was counted since the last flush beyond each first line, and starts afresh.
  void flush() {
    for (const auto& [key, entry] : entries_) {
      if (entry.count < 2) continue;
      spdlog::warn("sim_fleet_call_failures channel={} code={} count={} last_error=\"{}\"",
                   key.first, key.second, entry.count, entry.last_message);
    }
    entries_.clear();
  }

 private:
  struct Entry {
    int64_t count = 0;
    std::string last_message;
  };
  std::map<std::pair<std::string, std::string>, Entry> entries_;
};

struct SimNode {
  SimNode(asio::io_context& io, const client::ResolvedServer& server, int index,
          std::filesystem::path dir)
      : index(index), dir(std::move(dir)), watch(io, server), watch_timer(io), wake(io) {}

  const int index;
  const std::filesystem::path dir;
  std::optional<Identity> identity;
  client::AsyncHttpConnection watch;  // the node's own, for its desired-state watch
  asio::steady_timer watch_timer;     // the watcher's pauses
  asio::steady_timer wake;            // the reporter's sleep; a new desired state cancels it
  std::optional<model::DesiredState> desired;  // the newest from the server
  bool desired_pending = false;                // not yet converged to
  SimWorkloads workloads;
  // Sampled when the node reports (catching up the ticks since); none with telemetry off.
  std::optional<NodeTelemetry> telemetry;
  SimTelemetrySource* gpus = nullptr;  // telemetry's source, for the faults
};

template <class T, class Parse>
Result<T> answer(Result<client::HttpResponse> response, Parse parse) {
  if (!response) return fail(std::move(response).error());
  return parse(*response);
}

class Fleet {
 public:
  explicit Fleet(AgentOptions options) : options_(std::move(options)) {}

  // Checks the options, loads the identities, and prepares the nodes; then run().
  Status prepare() {
    if (options_.sim_nodes < 1 || options_.sim_nodes > kMaxSimNodes) {
      return fail(Error::invalid("invalid_sim_nodes",
                                 fmt::format("--sim-nodes must be 1 to {}", kMaxSimNodes)));
    }
    if (options_.sim_gpus.empty()) options_.sim_gpus = kDefaultSimGpus;
    GPURENT_TRY(layout, sim_gpu_layout(options_.sim_gpus));
    // Every agent message may be repeated (model/agent_protocol.h), so a kept-alive connection
    // the server closed in the meantime earns a request one more try on a fresh one.
    GPURENT_TRY(server,
                client::ResolvedServer::resolve(
                    options_.server_url, {.user_agent = "gpurent-agent-sim", .repeatable = true}));
    server_ = std::move(server);
    pool_ = std::make_unique<client::AsyncHttpPool>(io_, *server_, kSimPoolConnections);
    register_pool_ =
        std::make_unique<client::AsyncHttpPool>(io_, *server_, kSimRegisterConnections);

    const int gpus = static_cast<int>(layout.size());
    base_.cpu_count = kSimCpusPerGpu * gpus;
    base_.memory_mb = kSimMemoryMbPerGpu * gpus;
    base_.disk_gb = kSimDiskGbPerGpu * gpus;
    base_.fabric_group = options_.fabric_group;
    base_.labels = options_.labels;
    base_.simulated = true;
    base_.agent_version = std::string(kAgentVersion);
    base_.benchmarks = true;  // SimWorkloads::answer_benchmarks
    prefix_ = options_.node_name.empty() ? host_name() : options_.node_name;

    int without_identity = 0;
    for (int i = 0; i < options_.sim_nodes; ++i) {
      const auto dir = std::filesystem::path(options_.data_dir) / "sim-nodes" / std::to_string(i);
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) {
        return fail(Error::internal(
            fmt::format("cannot create the directory {}: {}", dir.string(), ec.message())));
      }
      auto node = std::make_unique<SimNode>(io_, *server_, i, dir);
      if (auto loaded = load_identity(dir)) {
        node->identity = std::move(*loaded);
      } else if (loaded.error().code != "file_not_found") {
        return fail(std::move(loaded).error());
      } else {
        ++without_identity;
      }
      nodes_.push_back(std::move(node));
    }
    if (without_identity > 0 && options_.join_token.empty()) {
      return fail(Error::invalid(
          "join_token_required",
          fmt::format("{} of the {} simulated nodes have no identity yet; give a join token",
                      without_identity, nodes_.size())));
    }
    raise_open_file_limit(nodes_.size() + kSimPoolConnections + kSimRegisterConnections +
                          kSpareFiles);
    return {};
  }

  // Runs every node until a signal (0) or a final refusal (1).
  int run() {
    signals_.async_wait([this](error_code ec, int signal) {
      if (ec) return;
      spdlog::info("agent_signal signal={}", sigabbrev_np(signal));
      stop(0);
    });
    started_ = SteadyClock::now();
    spdlog::info("sim_fleet_started nodes={} gpus={} server={} data_dir={}", nodes_.size(),
                 options_.sim_gpus, server_->base_url(), options_.data_dir);
    if (options_.telemetry_interval.count() > 0) faults_.refresh();
    for (auto& node : nodes_) spawn(run_node(*node));
    spawn(log_loop());
    if (options_.telemetry_interval.count() > 0) spawn(faults_loop());
    io_.run();
    files_.join();
    spdlog::info("sim_fleet_stopped nodes={}", nodes_.size());
    return status_;
  }

 private:
  // A coroutine that fails by an exception (a bug: they report errors as values) is logged.
  void spawn(asio::awaitable<void> coroutine) {
    asio::co_spawn(io_, std::move(coroutine), [](const std::exception_ptr& error) {
      if (!error) return;
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        spdlog::error("sim_fleet_coroutine_failed error=\"{}\"", e.what());
      }
    });
  }

  void stop(int status) {
    if (stopping_) return;
    stopping_ = true;
    status_ = status;
    error_code ignored;
    signals_.cancel(ignored);
    log_timer_.cancel();
    faults_timer_.cancel();
    pool_->close();
    register_pool_->close();
    for (auto& node : nodes_) {
      node->watch.close();
      node->watch_timer.cancel();
      node->wake.cancel();
    }
  }

  static void raise_open_file_limit(rlim_t needed) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= needed) return;
    limit.rlim_cur = std::min(needed, limit.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &limit);
    if (limit.rlim_cur < needed) {
      spdlog::warn(
          "sim_fleet_open_file_limit needed={} hard_limit={}: some nodes will fail to "
          "connect",
          needed, limit.rlim_max);
    }
  }

  // Waits until `until` on `timer`; false when the fleet stops.
  asio::awaitable<bool> sleep_until(asio::steady_timer& timer, SteadyTime until) {
    timer.expires_at(until);
    error_code ignored;
    co_await timer.async_wait(asio::redirect_error(kAwaitable, ignored));
    co_return !stopping_;
  }

  asio::awaitable<void> run_node(SimNode& node) {
    auto discover = [spec = options_.sim_gpus, dir = node.dir] {
      return simulated_gpus(spec, dir);
    };
    auto gpus = co_await net::await_on(files_, std::move(discover));
    if (!gpus) {
      if (!stopping_) {
        spdlog::error("sim_node_gpus_failed node={} code={} error=\"{}\"", node.index,
                      gpus.error().code, gpus.error().message);
        stop(1);
      }
      co_return;
    }
    node.workloads.answer_benchmarks(*gpus);
    if (options_.telemetry_interval.count() > 0) {
      auto source = std::make_unique<SimTelemetrySource>(*gpus, telemetry_seed_ + node.index);
      node.gpus = source.get();
      node.gpus->set_faults(faults_for(node.index));
      node.telemetry.emplace(std::move(source), options_.telemetry_interval,
                             kSimTelemetryBacklogTicks * gpus->size(), kSimTelemetryBacklogXids,
                             /*catch_up=*/true);
    }
    if (!node.identity) {
      const Status registered = co_await register_node(node, std::move(*gpus));
      if (!registered) {
        if (!stopping_) {
          spdlog::error("sim_node_register_failed node={} code={} error=\"{}\"", node.index,
                        registered.error().code, registered.error().message);
          stop(1);
        }
        co_return;
      }
      ++registered_;
    }
    if (++ready_ == nodes_.size()) {
      spdlog::info("sim_fleet_ready nodes={} registered={} reused={} seconds={:.3f}", ready_,
                   registered_, ready_ - registered_,
                   std::chrono::duration<double>(SteadyClock::now() - started_).count());
    }
    spawn(watch_loop(node));
    co_await report_loop(node);
  }

  // Registers the node and keeps its identity. Fails only for good: a refusal, a bad spec or a
  // data directory that cannot be written (a server that cannot be reached is waited for).
  asio::awaitable<Status> register_node(SimNode& node, std::vector<model::Gpu> gpus) {
    model::NodeRegistration registration = base_;
    registration.name = sim_node_name(prefix_, node.index);
    registration.gpus = std::move(gpus);
    const client::HttpRequest request =
        routes::request(routes::register_call(registration), options_.join_token);
    for (int failures = 1; !stopping_; ++failures) {
      const auto began = SteadyClock::now();
      auto response = co_await register_pool_->send(request, kHttpSlack);
      auto result = answer<model::RegistrationResult>(std::move(response), routes::register_answer);
      if (result) {
        Identity identity{result->node_id, result->credential};
        // Kept even when the fleet stops meanwhile: the server already knows the node.
        auto keep = [dir = node.dir, identity] { return save_identity(dir, identity); };
        auto saved = co_await net::await_on(files_, std::move(keep));
        if (!saved) co_return saved;
        spdlog::debug("node_registered node={} name={}", identity.node_id, registration.name);
        node.identity = std::move(identity);
        co_return Status{};
      }
      if (stopping_) break;
      const Error& error = result.error();
      if (error.kind != ErrorKind::kUnavailable && error.kind != ErrorKind::kInternal) {
        co_return fail(error);
      }
      failures_.note("register", error);
      const bool awake =
          co_await sleep_until(node.watch_timer, began + retry_delay(error, failures));
      if (!awake) break;
    }
    co_return fail(stopped_error());
  }

  // Watches the node's desired state on its own connection, as the single agent does
  // (node_agent.h): one stream for every change, a new one after it ends or breaks.
  asio::awaitable<void> watch_loop(SimNode& node) {
    int64_t generation = 0;  // 0: the first state at once, whatever the server has
    int failures = 0;
    while (!stopping_) {
      const auto began = SteadyClock::now();
      routes::DesiredWatch watch([&](std::optional<model::DesiredState> state) {
        if (state) take_desired(node, generation, std::move(*state));
        return !stopping_;
      });
      // Named, not a temporary in the awaited call (GCC 12, above).
      const std::function<bool(std::string_view)> on_piece = [&](std::string_view piece) {
        return watch.piece(piece);
      };
      const client::HttpRequest request =
          routes::request(routes::watch_call(generation), node.identity->credential);
      auto response =
          co_await node.watch.stream(request, model::kWatchKeepalive + kHttpSlack, on_piece);
      if (stopping_) break;
      const Status watched =
          response ? watch.end(*response) : Status(fail(std::move(response).error()));
      if (!watched) {
        failures_.note("desired", watched.error());
        const bool awake = co_await sleep_until(node.watch_timer,
                                                began + retry_delay(watched.error(), ++failures));
        if (!awake) break;
        continue;
      }
      failures = 0;
      const bool awake = co_await sleep_until(node.watch_timer, began + kMinWatchInterval);
      if (!awake) break;
    }
  }

  // A desired state from the watch: the reporter converges to it.
  static void take_desired(SimNode& node, int64_t& generation, model::DesiredState desired) {
    if (desired.generation == generation) return;
    generation = desired.generation;
    node.desired = std::move(desired);
    node.desired_pending = true;
    node.wake.cancel();
  }

  // Converges the node's workloads and reports: at once after a change, else once per
  // the node's report interval.
  asio::awaitable<void> report_loop(SimNode& node) {
    // Nodes that start together would report together forever; slightly different periods
    // (within +-10% of kSimReportInterval) spread them out within a few rounds.
    const auto interval =
        std::chrono::duration_cast<std::chrono::milliseconds>(kSimReportInterval) *
        (900 + 200 * node.index / static_cast<int>(nodes_.size())) / 1000;
    SteadyTime next_report{};
    SteadyTime retry_at{};
    int failures = 0;
    bool changed = false;  // since the last report the server took
    while (!stopping_) {
      auto now = SteadyClock::now();
      const auto runs_now = std::chrono::floor<SimWorkloads::Time::duration>(now);
      if (node.desired_pending) {
        node.desired_pending = false;
        changed |= node.workloads.converge(*node.desired, runs_now);
      }
      changed |= node.workloads.advance(runs_now);
      if ((changed || now >= next_report) && now >= retry_at) {
        const Status synced = co_await sync(node);
        if (stopping_) break;
        now = SteadyClock::now();
        if (synced) {
          failures = 0;
          changed = false;
          next_report = now + interval;
        } else {
          failures_.note("report", synced.error());
          retry_at = now + retry_delay(synced.error(), ++failures);
        }
      }
      if (node.desired_pending) continue;  // arrived while reporting
      SteadyTime wake_at = changed ? retry_at : std::max(next_report, retry_at);
      if (const auto exit = node.workloads.next_exit())
        wake_at = std::min<SteadyTime>(wake_at, *exit);
      const bool awake = co_await sleep_until(node.wake, wake_at);
      if (!awake) break;
    }
  }

  // Uploads the logs that are due, then reports (the order SimWorkloads relies on: an exit goes
  // after its log; a start goes at once, its log with a later sync).
  asio::awaitable<Status> sync(SimNode& node) {
    const std::string& credential = node.identity->credential;
    for (const auto& key : node.workloads.unsent_logs()) {
      const client::HttpRequest upload =
          routes::request(routes::logs_call(key.instance_id, key.run, 0, kSimLogLine), credential);
      auto response = co_await pool_->send(upload, kHttpSlack);
      auto size = answer<int64_t>(std::move(response), routes::logs_answer);
      if (!size && retryable(size.error())) co_return fail(std::move(size).error());
      node.workloads.log_sent(key);  // taken, or refused for good: the exit goes without it
    }
    model::NodeReport report = node.workloads.report();
    TelemetryBacklog::Pending telemetry;
    if (node.telemetry) {
      node.telemetry->tick(SteadyClock::now(), to_unix_ms(wall_clock_.now()),
                           node.workloads.busy_gpus());
      telemetry = node.telemetry->backlog().next();
      report.telemetry = std::move(telemetry.batch);
    }
    const client::HttpRequest sent =
        routes::request(routes::report_call(report, wall_clock_.now()), credential);
    auto response = co_await pool_->send(sent, kHttpSlack);
    auto reported = answer<void>(std::move(response), routes::report_answer);
    if (reported) {
      node.workloads.reported(report);
      if (node.telemetry) node.telemetry->backlog().taken(telemetry);
    }
    co_return reported;
  }

  // The faults file's entries for node `index` (those naming it, and those naming no node).
  std::vector<SimFault> faults_for(int index) const {
    std::vector<SimFault> mine;
    for (const auto& fault : faults_.faults()) {
      if (!fault.node || *fault.node == index) mine.push_back(fault);
    }
    return mine;
  }

  // Re-reads the faults file every telemetry interval and hands each node its faults.
  asio::awaitable<void> faults_loop() {
    while (true) {
      if (faults_.refresh()) {
        for (auto& node : nodes_) {
          if (node->gpus) node->gpus->set_faults(faults_for(node->index));
        }
      }
      const bool awake =
          co_await sleep_until(faults_timer_, SteadyClock::now() + options_.telemetry_interval);
      if (!awake) break;
    }
  }

  asio::awaitable<void> log_loop() {
    while (true) {
      const bool awake = co_await sleep_until(log_timer_, SteadyClock::now() + kSimLogInterval);
      if (!awake) break;
      failures_.flush();
      if (ready_ < nodes_.size()) {
        spdlog::info("sim_fleet_progress ready={}/{}", ready_, nodes_.size());
      }
    }
  }

  AgentOptions options_;
  bool stopping_ = false;
  int status_ = 0;
  // The io_context outlives every object whose sockets and timers it serves (declared first, so
  // destroyed last); run() returns only once every coroutine has finished.
  asio::io_context io_{1};
  asio::thread_pool files_{kSimFileThreads};
  asio::signal_set signals_{io_, SIGINT, SIGTERM};
  asio::steady_timer log_timer_{io_};
  asio::steady_timer faults_timer_{io_};
  SimFaultsFile faults_{std::filesystem::path(options_.data_dir) / kSimFaultsFile};
  const uint64_t telemetry_seed_ = os_random_seed();
  const SystemClock wall_clock_;  // the telemetry samples' and the reports' times
  std::optional<client::ResolvedServer> server_;
  std::unique_ptr<client::AsyncHttpPool> pool_;           // reports and log uploads
  std::unique_ptr<client::AsyncHttpPool> register_pool_;  // registrations
  std::vector<std::unique_ptr<SimNode>> nodes_;
  model::NodeRegistration base_;  // what every node registers, but its name and GPUs
  std::string prefix_;
  FailureLog failures_;
  SteadyTime started_{};
  size_t ready_ = 0;       // nodes with an identity
  size_t registered_ = 0;  // of which registered by this run
};

}  // namespace

std::string sim_node_name(std::string_view prefix, int index) {
  return fmt::format("{}-sim-{:04d}", prefix, index);
}

int run_sim_fleet(const AgentOptions& options) {
  const HeapHeadroom headroom(kHeapHeadroomBytes);
  Fleet fleet(options);
  if (auto prepared = fleet.prepare(); !prepared) {
    spdlog::error("agent_start_failed code={} error=\"{}\"", prepared.error().code,
                  prepared.error().message);
    return 1;
  }
  return fleet.run();
}

}  // namespace gpurent::agent
