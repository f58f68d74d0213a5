#include "agent/exec.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>
#include <deque>

#include "agent/runtime/sandbox.h"
#include "agent/runtime/workload_files.h"
#include "common/pipes.h"

namespace gpurent::agent {
namespace asio = boost::asio;

namespace {

constexpr auto kUseAwaitable = asio::use_awaitable;
constexpr size_t kReadBytes = 64 * 1024;
// How often a command whose pipes are closed is checked for its exit.
constexpr auto kReapInterval = std::chrono::milliseconds(20);

// Shared by the two pipe readers and the chunk source.
struct ExecState {
  ExecState(asio::io_context& io, int out_fd, int err_fd, pid_t pid)
      : out(io, out_fd), err(io, err_fd), wake(io), space(io), deadline(io), pid(pid) {
    wake.expires_at(asio::steady_timer::time_point::max());
    space.expires_at(asio::steady_timer::time_point::max());
  }

  void push(std::string frame) {
    queued_bytes += frame.size();
    frames.push_back(std::move(frame));
    wake.cancel();
  }

  asio::posix::stream_descriptor out;
  asio::posix::stream_descriptor err;
  asio::steady_timer wake;   // cancelled when a frame is queued or a pipe ends
  asio::steady_timer space;  // cancelled when the client took frames
  asio::steady_timer deadline;
  pid_t pid;
  std::deque<std::string> frames;
  size_t queued_bytes = 0;
  int open_pipes = 2;
  bool timed_out = false;
  std::optional<int> exit_code;  // once reaped
  bool exit_sent = false;
};

// Kills and reaps the command if the client leaves before it ended; held by the chunk source only.
struct ExecGuard {
  std::shared_ptr<ExecState> state;
  ExecGuard(const ExecGuard&) = delete;
  ExecGuard& operator=(const ExecGuard&) = delete;
  explicit ExecGuard(std::shared_ptr<ExecState> state) : state(std::move(state)) {}
  ~ExecGuard() {
    state->deadline.cancel();
    if (state->exit_code) return;
    ::kill(-state->pid, SIGKILL);
    // After SIGKILL the exit is a matter of microseconds; a zombie must not be left behind.
    while (::waitpid(state->pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    state->exit_code = 128 + SIGKILL;
    // A reader waiting for the client to take output would wait forever: it reads on to EOF.
    state->space.cancel();
    spdlog::info("exec_abandoned pid={}", state->pid);
  }
};

asio::awaitable<void> read_pipe(std::shared_ptr<ExecState> state,
                                asio::posix::stream_descriptor& pipe, model::ExecStream stream) {
  std::array<char, kReadBytes> buffer;
  std::string held;  // the start of a UTF-8 sequence that the last read cut
  boost::system::error_code ec;
  for (;;) {
    while (state->queued_bytes >= kMaxQueuedExecBytes && !state->exit_code) {
      state->space.expires_at(asio::steady_timer::time_point::max());
      co_await state->space.async_wait(asio::redirect_error(kUseAwaitable, ec));
    }
    const size_t n = co_await pipe.async_read_some(asio::buffer(buffer),
                                                   asio::redirect_error(kUseAwaitable, ec));
    if (n > 0) {
      held.append(buffer.data(), n);
      const size_t complete = model::utf8_complete_prefix(held);
      if (complete > 0) {
        state->push(model::exec_output_frame(stream, std::string_view(held).substr(0, complete)));
        held.erase(0, complete);
      }
    }
    if (ec) break;
  }
  if (!held.empty()) state->push(model::exec_output_frame(stream, held));
  pipe.close(ec);
  state->open_pipes -= 1;
  state->wake.cancel();
}

// Whether the command has exited; reaps it when it has.
bool reap(ExecState& state) {
  if (state.exit_code) return true;
  int status = 0;
  pid_t done;
  while ((done = ::waitpid(state.pid, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (done == 0) return false;
  if (done < 0) {
    state.exit_code = 128 + SIGKILL;  // not our child any more: nothing better to report
  } else {
    state.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  state.deadline.cancel();
  state.space.cancel();
  return true;
}

asio::awaitable<std::optional<std::string>> next_frame(std::shared_ptr<ExecState> state,
                                                       int timeout_s) {
  boost::system::error_code ec;
  for (;;) {
    if (!state->frames.empty()) {
      std::string frame = std::move(state->frames.front());
      state->frames.pop_front();
      state->queued_bytes -= frame.size();
      state->space.cancel();
      co_return frame;
    }
    if (state->exit_sent) co_return std::nullopt;
    if (state->open_pipes == 0) {
      // Output is over; the command may still run (it closed its pipes) until it exits or the
      // deadline kills it.
      if (reap(*state)) {
        state->exit_sent = true;
        co_return state->timed_out
            ? model::exec_exit_frame(model::kExecTimedOutCode,
                                     fmt::format("killed after the timeout of {} s", timeout_s))
            : model::exec_exit_frame(*state->exit_code);
      }
      state->wake.expires_after(kReapInterval);
    } else {
      state->wake.expires_at(asio::steady_timer::time_point::max());
    }
    co_await state->wake.async_wait(asio::redirect_error(kUseAwaitable, ec));
  }
}

std::string errno_text(const char* what) {
  return fmt::format("{}: {}", what, std::strerror(errno));
}

}  // namespace

std::optional<std::string> resolve_program(const std::string& name, std::string_view path) {
  if (name.find('/') != std::string::npos) return name;
  while (true) {
    const size_t colon = path.find(':');
    std::string dir(path.substr(0, colon));
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) {
      return candidate;
    }
    if (colon == std::string_view::npos) return std::nullopt;
    path.remove_prefix(colon + 1);
  }
}

Result<Launch> read_run_launch(const std::filesystem::path& workload_dir) {
  auto launch = read_launch(workload_dir);
  if (!launch) {
    // The run is running, so its record should be there: the node's files are not as expected.
    return fail(Error::internal(fmt::format("cannot read the run's launch record in {}: {}",
                                            workload_dir.string(), launch.error().message)));
  }
  return launch;
}

Result<std::optional<SandboxEntry>> open_run_sandbox(const std::filesystem::path& workload_dir,
                                                     const Launch& launch) {
  if (!launch.sandbox) return std::optional<SandboxEntry>();
  auto state = read_shim_state(workload_dir);
  if (!state || state->sandbox_init == 0) {
    return fail(Error{ErrorKind::kConflict, "instance_not_running",
                      "the run's sandbox is not up yet; try again in a moment"});
  }
  GPURENT_TRY(entry, open_sandbox_entry(state->sandbox_init, *launch.sandbox));
  return std::optional<SandboxEntry>(std::move(entry));
}

Result<net::Response> start_exec(asio::io_context& io, const std::filesystem::path& workload_dir,
                                 const model::ExecRequest& request) {
  GPURENT_TRY(launch, read_run_launch(workload_dir));
  const auto path = launch.env.find("PATH");
  const auto program = resolve_program(request.command.front(),
                                       path == launch.env.end() ? "/usr/bin:/bin" : path->second);
  if (!program) {
    return fail(
        Error{ErrorKind::kNotFound, "command_not_found",
              fmt::format("'{}' is not found on the instance's PATH", request.command.front())});
  }
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<std::string> env_strings;
  for (const auto& [name, value] : launch.env) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = request.command;
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const std::string& program_path = *program;
  // A sandboxed run's command runs in its sandbox, as its user (sandbox.h), entered through the
  // run's init: what the child needs is opened here, before the fork.
  GPURENT_TRY(sandbox, open_run_sandbox(workload_dir, launch));

  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return fail(Error::internal(errno_text("pipe2")));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return fail(Error::internal(errno_text("pipe2")));
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    become_command_child(::open("/dev/null", O_RDONLY), out[1], err[1]);
    if (sandbox) enter_sandbox_as_user(*sandbox, "gpurent exec");
    if (::chdir(launch.cwd.c_str()) != 0) {
      constexpr std::string_view kMessage = "gpurent exec: cannot enter the instance directory\n";
      [[maybe_unused]] ssize_t ignored = ::write(2, kMessage.data(), kMessage.size());
      ::_exit(126);
    }
    ::close_range(3, ~0U, 0);
    ::execve(program_path.c_str(), argv.data(), envp.data());
    constexpr std::string_view kMessage = "gpurent exec: cannot execute the command\n";
    [[maybe_unused]] ssize_t ignored = ::write(2, kMessage.data(), kMessage.size());
    ::_exit(126);
  }
  const std::string fork_error = pid < 0 ? errno_text("fork") : "";
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(out[0]);
    ::close(err[0]);
    return fail(Error::internal(fork_error));
  }
  spdlog::info("exec_started pid={} dir={} command=\"{}\"", pid, workload_dir.string(),
               request.command.front());

  auto state = std::make_shared<ExecState>(io, out[0], err[0], pid);
  asio::co_spawn(io, read_pipe(state, state->out, model::ExecStream::kStdout), asio::detached);
  asio::co_spawn(io, read_pipe(state, state->err, model::ExecStream::kStderr), asio::detached);
  state->deadline.expires_after(std::chrono::seconds(request.timeout_s));
  state->deadline.async_wait(
      [weak = std::weak_ptr<ExecState>(state)](boost::system::error_code ec) {
        auto state = weak.lock();
        if (ec || !state || state->exit_code) return;
        state->timed_out = true;
        ::kill(-state->pid, SIGKILL);
      });

  auto guard = std::make_shared<ExecGuard>(state);
  net::Response response{200, std::string(model::kExecContentType), "", {}, {}};
  const int timeout_s = request.timeout_s;
  response.chunks = [guard, timeout_s]() { return next_frame(guard->state, timeout_s); };
  return response;
}

}  // namespace gpurent::agent
