#include "agent/container_exec.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "agent/exec.h"
#include "agent/runtime/docker_api.h"

namespace gpurent::agent {
namespace asio = boost::asio;

namespace {

// The engine's stream may pause for as long as the command is quiet; the exec's own deadline ends
// it before this does.
constexpr auto kEngineIdleMargin = std::chrono::seconds(30);

// Shared by the exec's thread (producer) and the chunk source on the io_context (consumer).
struct ContainerExecState {
  ContainerExecState(asio::io_context& io, std::string socket_path, std::string exec)
      : io(io), socket_path(std::move(socket_path)), exec(std::move(exec)), wake(io), deadline(io) {
    wake.expires_at(asio::steady_timer::time_point::max());
  }

  // Producer side: waits while the client is behind; false once the client has gone.
  bool push(std::string frame) {
    std::unique_lock lock(mutex);
    space.wait(lock, [&] { return queued_bytes < kMaxQueuedExecBytes || abandoned; });
    if (abandoned) return false;
    queued_bytes += frame.size();
    frames.push_back(std::move(frame));
    lock.unlock();
    notify();
    return true;
  }
  void finish(std::string exit_frame) {
    {
      std::lock_guard lock(mutex);
      last = std::move(exit_frame);
    }
    notify();
  }
  // Wakes the chunk source on its own thread (timers are not thread-safe).
  void notify() {
    asio::post(io, [weak = weak_self] {
      if (auto self = weak.lock()) self->wake.cancel();
    });
  }
  // Kills the command: the engine says which host process it is. On a thread of its own, so the
  // io_context never waits for the engine.
  void kill_command() {
    std::thread([socket_path = socket_path, exec = exec] {
      auto client = DockerClient::open(socket_path);
      auto info = client ? client->exec_inspect(exec) : Result<ExecInfo>(fail(client.error()));
      if (!info) {
        spdlog::warn("exec_kill_failed exec={} error=\"{}\"", exec, info.error().message);
      } else if (info->pid > 0) {
        ::kill(info->pid, SIGKILL);
        spdlog::info("exec_killed exec={} pid={}", exec, info->pid);
      }
    }).detach();
  }

  asio::io_context& io;
  const std::string socket_path;
  const std::string exec;
  std::weak_ptr<ContainerExecState> weak_self;
  asio::steady_timer wake;  // io thread only
  asio::steady_timer deadline;
  std::mutex mutex;
  std::condition_variable space;
  std::deque<std::string> frames;
  size_t queued_bytes = 0;
  std::optional<std::string> last;  // the exit frame, once the command ended
  bool abandoned = false;           // the client went away
  bool timed_out = false;
};

// Held by the chunk source only: when the client goes, the command goes.
struct ContainerExecGuard {
  std::shared_ptr<ContainerExecState> state;
  explicit ContainerExecGuard(std::shared_ptr<ContainerExecState> s) : state(std::move(s)) {}
  ContainerExecGuard(const ContainerExecGuard&) = delete;
  ContainerExecGuard& operator=(const ContainerExecGuard&) = delete;
  ~ContainerExecGuard() {
    state->deadline.cancel();
    {
      std::lock_guard lock(state->mutex);
      if (state->last) return;
      state->abandoned = true;
    }
    state->space.notify_all();
    state->kill_command();
    spdlog::info("exec_abandoned exec={}", state->exec);
  }
};

asio::awaitable<std::optional<std::string>> next_frame(std::shared_ptr<ContainerExecState> state) {
  boost::system::error_code ec;
  for (;;) {
    {
      std::unique_lock lock(state->mutex);
      if (!state->frames.empty()) {
        std::string frame = std::move(state->frames.front());
        state->frames.pop_front();
        state->queued_bytes -= frame.size();
        lock.unlock();
        state->space.notify_all();
        co_return frame;
      }
      if (state->last) {
        std::optional<std::string> last = std::exchange(state->last, std::string());
        if (last->empty()) co_return std::nullopt;  // sent already
        co_return last;
      }
    }
    state->wake.expires_at(asio::steady_timer::time_point::max());
    co_await state->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

// The exec's thread: streams the output, then the exit frame.
void run_exec(std::shared_ptr<ContainerExecState> state, DockerClient client,
              const std::string& exec, int timeout_s) {
  std::string held[3];  // per stream: the start of a UTF-8 sequence a frame cut
  const auto output = [&](int stream, std::string_view bytes) {
    if (stream != 1 && stream != 2) return true;  // stdin echo: not ours to show
    std::string& pending = held[stream];
    pending.append(bytes);
    const size_t complete = model::utf8_complete_prefix(pending);
    if (complete == 0) return true;
    const auto which = stream == 2 ? model::ExecStream::kStderr : model::ExecStream::kStdout;
    const bool wanted =
        state->push(model::exec_output_frame(which, std::string_view(pending).substr(0, complete)));
    pending.erase(0, complete);
    return wanted;
  };
  auto code = client.exec_start(exec, output, std::chrono::seconds(timeout_s) + kEngineIdleMargin);
  for (int stream : {1, 2}) {
    if (!held[stream].empty()) {
      state->push(model::exec_output_frame(
          stream == 2 ? model::ExecStream::kStderr : model::ExecStream::kStdout, held[stream]));
    }
  }
  bool timed_out;
  {
    std::lock_guard lock(state->mutex);
    timed_out = state->timed_out;
  }
  if (timed_out) {
    state->finish(model::exec_exit_frame(
        model::kExecTimedOutCode, fmt::format("killed after the timeout of {} s", timeout_s)));
  } else if (code) {
    state->finish(model::exec_exit_frame(*code));
  } else {
    // The client gone, or the engine failed mid-way: say why, with timeout(1)'s "failed" status.
    state->finish(model::exec_exit_frame(125, code.error().message));
  }
}

}  // namespace

Result<net::Response> start_container_exec(asio::io_context& io, const std::string& socket_path,
                                           std::string container,
                                           const model::ExecRequest& request) {
  if (socket_path.empty()) {
    return fail(Error{ErrorKind::kUnavailable, "no_container_runtime",
                      "the run is in a container but this agent has no container engine"});
  }
  GPURENT_TRY(client, DockerClient::open(socket_path));
  GPURENT_TRY(exec, client.exec_create(container, {.command = request.command,
                                                   .working_dir = std::string(kContainerWorkdir)}));
  auto state = std::make_shared<ContainerExecState>(io, socket_path, exec);
  state->weak_self = state;
  spdlog::info("exec_started container={} command=\"{}\"", container, request.command.front());
  std::thread(run_exec, state, std::move(client), exec, request.timeout_s).detach();

  state->deadline.expires_after(std::chrono::seconds(request.timeout_s));
  state->deadline.async_wait(
      [weak = std::weak_ptr<ContainerExecState>(state)](boost::system::error_code ec) {
        auto state = weak.lock();
        if (ec || !state) return;
        {
          std::lock_guard lock(state->mutex);
          if (state->last) return;
          state->timed_out = true;
        }
        state->kill_command();
      });

  auto guard = std::make_shared<ContainerExecGuard>(state);
  net::Response response{200, std::string(model::kExecContentType), "", {}, {}};
  response.chunks = [guard]() { return next_frame(guard->state); };
  return response;
}

}  // namespace gpurent::agent
