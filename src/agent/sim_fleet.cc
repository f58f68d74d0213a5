// Boost.Asio and Beast on C++20 coroutines, in this one translation unit (they are the slowest
// headers of the build). Every node is two coroutines on one io_context: the watcher and the
// reporter. Blocking file work runs on a small thread pool and is awaited as an asynchronous
// operation. GCC 12 miscompiles some co_await forms (a capturing lambda as a temporary in the
// awaited expression, co_await in a loop condition), so every co_await here stands alone.
#include <utility>  // before Asio: Boost 1.74 with C++20 coroutines needs it

#include "agent/sim_fleet.h"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <string.h>
#include <sys/resource.h>

#include <array>
#include <deque>
#include <filesystem>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>
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
#include "client/http_client.h"
#include "common/clock.h"
#include "common/heap_headroom.h"
#include "common/random.h"
#include "net/read_buffer.h"

namespace gpurent::agent {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;
using SteadyTime = SteadyClock::time_point;

constexpr auto kAwaitable = asio::use_awaitable;
// Open files besides the connections: the data directory's, the resolver's, the log's.
constexpr rlim_t kSpareFiles = 64;

Error stopped_error() {
  return {ErrorKind::kUnavailable, "agent_stopping", "the agent is stopping"};
}

// What every connection needs to know about the server; owned by the fleet.
struct Server {
  std::string base_url;   // "http://host:port", for messages
  std::string authority;  // the Host header
  tcp::resolver::results_type endpoints;
  const bool* stopping = nullptr;
};

// Resolves the server once, at start: a fleet of thousands must not resolve per connection.
Result<Server> find_server(std::string_view url, const bool* stopping) {
  // The one URL grammar of every gpurent client.
  GPURENT_TRY(checked, client::HttpClient::create(url));
  Server server{checked.base_url(),
                checked.base_url().substr(std::string_view("http://").size()),
                {},
                stopping};
  std::string host = server.authority;
  std::string port = "80";
  if (host.starts_with('[')) {
    const size_t close = host.find(']');
    if (close + 1 < host.size()) port = host.substr(close + 2);
    host = host.substr(1, close - 1);
  } else if (const size_t colon = host.rfind(':'); colon != std::string::npos) {
    port = host.substr(colon + 1);
    host.resize(colon);
  }
  asio::io_context io;
  beast::error_code ec;
  server.endpoints = tcp::resolver(io).resolve(host, port, ec);
  if (ec) {
    return fail(Error{ErrorKind::kUnavailable, "connection_failed",
                      fmt::format("cannot resolve '{}': {}", host, ec.message())});
  }
  return server;
}

Result<client::HttpResponse> failed_call(Error error) { return fail(std::move(error)); }

// One keep-alive HTTP/1.1 connection to the server, used by one coroutine at a time.
class Connection {
 public:
  Connection(asio::io_context& io, const Server& server) : stream_(io), server_(server) {
    buffer_.reserve(net::kReadBufferBytes);
  }

  // Sends the call and reads the whole answer within `timeout` per attempt. Errors as
  // client::HttpClient's: kUnavailable "connection_failed" or "timeout", and every HTTP status
  // is an answer for the caller to judge.
  asio::awaitable<Result<client::HttpResponse>> send(const routes::Call& call,
                                                     std::string_view bearer,
                                                     std::chrono::milliseconds timeout) {
    co_return co_await exchange(call, bearer, timeout, nullptr);
  }

  // Sends the call and hands the answer's chunked body to on_piece as it arrives, until on_piece
  // returns false (the connection is then closed) or the answer ends; `idle` bounds the wait for
  // each piece. Errors as send()'s; an answer that is not chunked (an error document) comes back
  // whole, as send() gives it, and on_piece never sees it.
  asio::awaitable<Result<client::HttpResponse>> stream(
      const routes::Call& call, std::string_view bearer, std::chrono::milliseconds idle,
      const std::function<bool(std::string_view)>& on_piece) {
    co_return co_await exchange(call, bearer, idle, &on_piece);
  }

  // Also ends the operation in progress, which then fails.
  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    buffer_.clear();
    open_ = false;
  }

 private:
  asio::awaitable<Result<client::HttpResponse>> exchange(
      const routes::Call& call, std::string_view bearer, std::chrono::milliseconds timeout,
      const std::function<bool(std::string_view)>* on_piece) {
    // Formatted directly: Beast's serializer cost more than building the call (as the server's
    // answers, net/http.cc).
    std::string head = fmt::format(
        "{} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: gpurent-agent-sim\r\n"
        "Authorization: Bearer {}\r\n",
        call.method, call.target, server_.authority, bearer);
    if (!call.body.empty()) {
      fmt::format_to(std::back_inserter(head), "Content-Type: {}\r\n", call.content_type);
    }
    if (!call.body.empty() || call.method != "GET") {
      fmt::format_to(std::back_inserter(head), "Content-Length: {}\r\n", call.body.size());
    }
    head += "\r\n";
    const std::array<asio::const_buffer, 2> request{asio::buffer(head), asio::buffer(call.body)};
    for (int attempt = 0;; ++attempt) {
      if (*server_.stopping) co_return failed_call(stopped_error());
      const bool reused = open_;
      beast::error_code ec;
      if (!open_) {
        stream_.expires_after(timeout);
        co_await stream_.async_connect(server_.endpoints, asio::redirect_error(kAwaitable, ec));
        if (ec) {
          close();
          co_return failed_call(transport_error(call, ec, timeout));
        }
        beast::error_code ignored;
        stream_.socket().set_option(tcp::no_delay(true), ignored);
        open_ = true;
      }
      stream_.expires_after(timeout);
      co_await asio::async_write(stream_, request, asio::redirect_error(kAwaitable, ec));
      http::response_parser<http::string_body> parser;
      // A stream has no end, and Beast counts its chunks against the limit: none for a stream
      // (its reader bounds each line), as HttpClient::stream does.
      parser.body_limit(on_piece ? std::numeric_limits<std::uint64_t>::max()
                                 : client::kMaxResponseBodyBytes);
      // A streamed body's pieces go to on_piece as they are parsed, never into the body.
      bool stopped = false;
      auto to_piece = [&](uint64_t, std::string_view piece, beast::error_code& stop) {
        if (!(*on_piece)(piece)) {
          stopped = true;
          stop = asio::error::operation_aborted;
        }
        return piece.size();
      };
      if (on_piece) parser.on_chunk_body(to_piece);
      if (!ec && !on_piece) {
        co_await http::async_read(stream_, buffer_, parser, asio::redirect_error(kAwaitable, ec));
      }
      while (!ec && on_piece && !parser.is_done()) {
        stream_.expires_after(timeout);  // per piece: a stream has no end to wait for
        co_await http::async_read_some(stream_, buffer_, parser,
                                       asio::redirect_error(kAwaitable, ec));
      }
      if (stopped) {
        close();
        co_return client::HttpResponse{static_cast<int>(parser.get().result_int()), "", ""};
      }
      if (ec) {
        const bool answered = parser.got_some();
        close();
        // Every agent message may be repeated (agent_protocol.h), so a kept-alive connection
        // the server closed in the meantime earns one more try on a fresh one.
        if (reused && attempt == 0 && !answered && ec != beast::error::timeout) continue;
        co_return failed_call(transport_error(call, ec, timeout));
      }
      auto& message = parser.get();
      if (!message.keep_alive()) close();
      co_return client::HttpResponse{static_cast<int>(message.result_int()),
                                     std::string(message[http::field::content_type]),
                                     std::move(message.body())};
    }
  }

  Error transport_error(const routes::Call& call, beast::error_code ec,
                        std::chrono::milliseconds timeout) const {
    if (*server_.stopping) return stopped_error();
    if (ec == beast::error::timeout) {
      return {ErrorKind::kUnavailable, "timeout",
              fmt::format("{} {}{}: no answer within {} ms", call.method, server_.base_url,
                          call.target, timeout.count())};
    }
    return {ErrorKind::kUnavailable, "connection_failed",
            fmt::format("{} {}{}: {}", call.method, server_.base_url, call.target,
                        ec == http::error::end_of_stream ? "the server closed the connection"
                                                         : ec.message())};
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  const Server& server_;
  bool open_ = false;
};

// A fixed set of connections, lent to one coroutine at a time in the order they asked.
class ConnectionPool {
 public:
  ConnectionPool(asio::io_context& io, const Server& server, size_t size) : io_(io) {
    for (size_t i = 0; i < size; ++i) {
      all_.push_back(std::make_unique<Connection>(io, server));
      idle_.push_back(all_.back().get());
    }
  }

  // A connection to give back with release(), or nullptr once the pool is closed.
  asio::awaitable<Connection*> acquire() {
    if (closed_) co_return nullptr;
    if (!idle_.empty()) {
      Connection* connection = idle_.front();
      idle_.pop_front();
      co_return connection;
    }
    Waiter waiter{asio::steady_timer(io_, SteadyTime::max())};
    waiters_.push_back(&waiter);
    beast::error_code ignored;
    co_await waiter.timer.async_wait(asio::redirect_error(kAwaitable, ignored));
    co_return waiter.given;
  }

  void release(Connection* connection) {
    if (waiters_.empty()) {
      idle_.push_back(connection);
      return;
    }
    Waiter* waiter = waiters_.front();
    waiters_.pop_front();
    waiter->given = connection;
    waiter->timer.cancel();
  }

  // Closes every connection (ending the calls in progress) and wakes the waiters empty-handed.
  void close() {
    closed_ = true;
    for (auto& connection : all_) connection->close();
    for (Waiter* waiter : waiters_) waiter->timer.cancel();
    waiters_.clear();
  }

 private:
  struct Waiter {
    asio::steady_timer timer;  // cancelled to wake it
    Connection* given = nullptr;
  };

  asio::io_context& io_;
  std::vector<std::unique_ptr<Connection>> all_;
  // Lent in turn, the longest idle first: every connection is opened while the fleet is calm
  // (its nodes' periodic reports), not all at once when a burst of new work needs them.
  std::deque<Connection*> idle_;
  std::deque<Waiter*> waiters_;  // each lives in its acquire() frame until woken
  bool closed_ = false;
};

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
  SimNode(asio::io_context& io, const Server& server, int index, std::filesystem::path dir)
      : index(index), dir(std::move(dir)), watch(io, server), watch_timer(io), wake(io) {}

  const int index;
  const std::filesystem::path dir;
  std::optional<Identity> identity;
  Connection watch;                // the node's own connection, for its desired-state watch
  asio::steady_timer watch_timer;  // the watcher's pauses
  asio::steady_timer wake;         // the reporter's sleep; a new desired state cancels it
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
    GPURENT_TRY(server, find_server(options_.server_url, &stopping_));
    server_ = std::move(server);
    pool_ = std::make_unique<ConnectionPool>(io_, server_, kSimPoolConnections);
    register_pool_ = std::make_unique<ConnectionPool>(io_, server_, kSimRegisterConnections);

    const int gpus = static_cast<int>(layout.size());
    base_.cpu_count = kSimCpusPerGpu * gpus;
    base_.memory_mb = kSimMemoryMbPerGpu * gpus;
    base_.disk_gb = kSimDiskGbPerGpu * gpus;
    base_.fabric_group = options_.fabric_group;
    base_.labels = options_.labels;
    base_.simulated = true;
    base_.agent_version = std::string(kAgentVersion);
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
      auto node = std::make_unique<SimNode>(io_, server_, i, dir);
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
    signals_.async_wait([this](beast::error_code ec, int signal) {
      if (ec) return;
      spdlog::info("agent_signal signal={}", sigabbrev_np(signal));
      stop(0);
    });
    started_ = SteadyClock::now();
    spdlog::info("sim_fleet_started nodes={} gpus={} server={} data_dir={}", nodes_.size(),
                 options_.sim_gpus, server_.base_url, options_.data_dir);
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
    asio::co_spawn(io_, std::move(coroutine), [](std::exception_ptr error) {
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
    beast::error_code ignored;
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

  // Runs `work` on a file thread; awaiting the result resumes on the io thread.
  template <class Work>
  auto on_file_thread(Work work) {
    using R = std::invoke_result_t<Work&>;
    return asio::async_initiate<decltype(kAwaitable), void(R)>(
        [this](auto handler, Work work) {
          asio::post(
              files_, [this, handler = std::move(handler), work = std::move(work)]() mutable {
                const auto resume_on = asio::get_associated_executor(handler, io_.get_executor());
                asio::post(resume_on, [handler = std::move(handler), result = work()]() mutable {
                  std::move(handler)(std::move(result));
                });
              });
        },
        kAwaitable, std::move(work));
  }

  // Waits until `until` on `timer`; false when the fleet stops.
  asio::awaitable<bool> sleep_until(asio::steady_timer& timer, SteadyTime until) {
    timer.expires_at(until);
    beast::error_code ignored;
    co_await timer.async_wait(asio::redirect_error(kAwaitable, ignored));
    co_return !stopping_;
  }

  asio::awaitable<Result<client::HttpResponse>> call_pooled(ConnectionPool& pool,
                                                            const routes::Call& call,
                                                            std::string_view bearer) {
    Connection* connection = co_await pool.acquire();
    if (!connection) co_return failed_call(stopped_error());
    auto response = co_await connection->send(call, bearer, kHttpSlack);
    pool.release(connection);
    co_return response;
  }

  asio::awaitable<void> run_node(SimNode& node) {
    auto discover = [spec = options_.sim_gpus, dir = node.dir] {
      return simulated_gpus(spec, dir);
    };
    auto gpus = co_await on_file_thread(std::move(discover));
    if (!gpus) {
      if (!stopping_) {
        spdlog::error("sim_node_gpus_failed node={} code={} error=\"{}\"", node.index,
                      gpus.error().code, gpus.error().message);
        stop(1);
      }
      co_return;
    }
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
    const routes::Call call = routes::register_call(registration);
    for (int failures = 1; !stopping_; ++failures) {
      const auto began = SteadyClock::now();
      auto response = co_await call_pooled(*register_pool_, call, options_.join_token);
      auto result = answer<model::RegistrationResult>(std::move(response), routes::register_answer);
      if (result) {
        Identity identity{result->node_id, result->credential};
        // Kept even when the fleet stops meanwhile: the server already knows the node.
        auto keep = [dir = node.dir, identity] { return save_identity(dir, identity); };
        auto saved = co_await on_file_thread(std::move(keep));
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
      auto response =
          co_await node.watch.stream(routes::watch_call(generation), node.identity->credential,
                                     model::kWatchKeepalive + kHttpSlack, on_piece);
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
      if (node.desired_pending) {
        node.desired_pending = false;
        changed |= node.workloads.converge(*node.desired, now);
      }
      changed |= node.workloads.advance(now);
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
      if (const auto exit = node.workloads.next_exit()) wake_at = std::min(wake_at, *exit);
      const bool awake = co_await sleep_until(node.wake, wake_at);
      if (!awake) break;
    }
  }

  // Uploads the logs that are due, then reports (the order SimWorkloads relies on: an exit goes
  // after its log; a start goes at once, its log with a later sync).
  asio::awaitable<Status> sync(SimNode& node) {
    const std::string& credential = node.identity->credential;
    for (const auto& key : node.workloads.unsent_logs()) {
      auto response = co_await call_pooled(
          *pool_, routes::logs_call(key.instance_id, key.run, 0, kSimLogLine), credential);
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
    auto response =
        co_await call_pooled(*pool_, routes::report_call(report, wall_clock_.now()), credential);
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
  Server server_;
  std::unique_ptr<ConnectionPool> pool_;           // reports and log uploads
  std::unique_ptr<ConnectionPool> register_pool_;  // registrations
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
