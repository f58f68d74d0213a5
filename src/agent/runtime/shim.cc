// `gpurent __shim <workload dir> <ready fd>`: supervises one workload process (see
// process_runtime.h for the contract and workload_files.h for the files).
//
// The shim is single-threaded and short of dependencies on purpose: it lives as long as the
// workload, possibly much longer than the agent that started it.
#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/files.h"
#include "agent/runtime/process_runtime.h"
#include "agent/runtime/sandbox.h"
#include "agent/runtime/workload_files.h"
#include "common/json.h"

namespace gpurent::agent {
namespace {

// Exit codes of a run that could not start, as POSIX shells use them.
constexpr int kNotFoundExitCode = 127;
constexpr int kCannotExecuteExitCode = 126;

// Where the workload child failed before its exec, sent to the shim over a CLOEXEC pipe (EOF
// on that pipe means the exec succeeded).
struct ChildFailure {
  enum Stage : int { kChdir = 1, kExec = 2, kUser = 3, kSandbox = 4 } stage;
  int error;
};

[[noreturn]] void child_fail(int pipe_fd, ChildFailure::Stage stage) {
  const ChildFailure failure{stage, errno};
  [[maybe_unused]] ssize_t ignored = ::write(pipe_fd, &failure, sizeof failure);
  ::_exit(stage == ChildFailure::kExec && (failure.error == ENOENT || failure.error == ENOTDIR)
              ? kNotFoundExitCode
              : kCannotExecuteExitCode);
}

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
}

class Shim {
 public:
  Shim(std::filesystem::path dir, int ready_fd) : dir_(std::move(dir)), ready_fd_(ready_fd) {}

  int run() {
    // Own session and process group: the agent stops a run by signalling this group, which must
    // hold the workload and its children but never the agent.
    if (::setsid() < 0) return finish({kCannotExecuteExitCode, errno_message("setsid"), true});
    auto launch = read_launch(dir_);
    if (!launch) return finish({kCannotExecuteExitCode, launch.error().message, true});
    const auto self = read_proc_stat(::getpid());
    if (!self) return finish({kCannotExecuteExitCode, "cannot read /proc/self/stat", true});
    self_start_time_ = self->start_time;
    if (auto state = write_shim_state(dir_, {::getpid(), self->start_time}); !state) {
      return finish({kCannotExecuteExitCode, state.error().message, true});
    }
    log_fd_ = ::open((dir_ / kLogFile).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (log_fd_ < 0) return finish({kCannotExecuteExitCode, errno_message("open the log"), true});

    auto started = start_workload(*launch);
    if (!started) {
      write_all(log_fd_, fmt::format("gpurent: {}\n", started.error().message));
      return finish({kCannotExecuteExitCode, started.error().message, true});
    }
    const auto [pid, failure] = *started;
    std::string message;
    if (failure) {
      message = failure_message(*failure, *launch);
      write_all(log_fd_, fmt::format("gpurent: {}\n", message));
    }
    signal_ready();

    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) return finish({kKilledExitCode, errno_message("waitpid")});
    }
    status = workload_status(status);
    ExitRecord record{0, std::move(message), failure.has_value()};
    if (WIFEXITED(status)) {
      record.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      record.exit_code = 128 + WTERMSIG(status);
      const char* name = ::sigabbrev_np(WTERMSIG(status));
      record.message = fmt::format("killed by signal SIG{}", name ? name : "?");
    }
    return finish(std::move(record));
  }

 private:
  struct Started {
    pid_t pid;
    std::optional<ChildFailure> failure;
  };

  // Forks the workload and waits until its exec succeeded (EOF) or failed (a ChildFailure). A
  // sandboxed run (sandbox.h) is forked as the init of a new PID namespace, which builds the run's
  // view of the host and forks the workload itself.
  Result<Started> start_workload(const Launch& launch) {
    std::vector<std::string> env_strings;
    for (const auto& [name, value] : launch.env) env_strings.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (auto& entry : env_strings) envp.push_back(entry.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = launch.command;
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0) return fail(Error::internal(errno_message("open /dev/null")));
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) {
      ::close(null_fd);
      return fail(Error::internal(errno_message("pipe2")));
    }
    if (launch.sandbox) {
      if (::pipe2(status_pipe_, O_CLOEXEC) != 0 || ::unshare(CLONE_NEWPID) != 0) {
        ::close(null_fd);
        ::close(report[0]);
        ::close(report[1]);
        return fail(Error::internal(errno_message("make the sandbox's PID namespace")));
      }
    }

    const auto exec_workload = [&]() {
      // The shim ignores SIGTERM/SIGINT/SIGHUP/SIGPIPE, and ignored dispositions survive exec:
      // give the workload the defaults (so a stop's SIGTERM reaches it) and an empty mask.
      struct sigaction defaults {};
      defaults.sa_handler = SIG_DFL;
      for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &defaults, nullptr);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::dup2(null_fd, 0);
      ::dup2(log_fd_, 1);
      ::dup2(log_fd_, 2);
      if (launch.sandbox) {
        if (const int error = drop_to_sandbox_user(launch.sandbox->uid, launch.sandbox->gid)) {
          errno = error;
          child_fail(report[1], ChildFailure::kUser);
        }
      }
      if (::chdir(launch.cwd.c_str()) != 0) child_fail(report[1], ChildFailure::kChdir);
      // execvp searches the PATH of the calling process, so the workload's environment becomes
      // ours first (we are a single-threaded child: nothing else reads environ).
      environ = envp.data();
      ::execvp(argv[0], argv.data());
      child_fail(report[1], ChildFailure::kExec);
    };

    const pid_t pid = ::fork();
    if (pid == 0) {
      if (!launch.sandbox) exec_workload();
      // PID 1 of the run's namespace: the view and the limits first, then the workload.
      auto prepared = [&]() -> Status {
        if (::unshare(CLONE_NEWNS | CLONE_NEWIPC) != 0) {
          return fail(Error::internal(errno_message("make the sandbox's mount namespace")));
        }
        GPURENT_CHECK(build_sandbox_view(*launch.sandbox));
        return join_sandbox_cgroups(*launch.sandbox);
      }();
      if (!prepared) {
        write_all(log_fd_, fmt::format("gpurent: sandbox: {}\n", prepared.error().message));
        errno = EPERM;
        child_fail(report[1], ChildFailure::kSandbox);
      }
      const pid_t workload = ::fork();
      if (workload == 0) exec_workload();
      if (workload < 0) child_fail(report[1], ChildFailure::kExec);
      ::close(report[1]);
      run_sandbox_init(workload, status_pipe_[1]);
    }
    const std::string fork_error = pid < 0 ? errno_message("fork") : "";
    ::close(report[1]);
    ::close(null_fd);
    if (launch.sandbox) ::close(status_pipe_[1]);
    if (pid > 0 && launch.sandbox) {
      // `gpurent exec` enters the run through its init.
      if (auto state = write_shim_state(dir_, {::getpid(), self_start_time_, pid}); !state) {
        write_all(log_fd_, fmt::format("gpurent: {}\n", state.error().message));
      }
    }
    std::optional<ChildFailure> failure;
    if (pid > 0) {
      ChildFailure received{};
      ssize_t n;
      while ((n = ::read(report[0], &received, sizeof received)) < 0 && errno == EINTR) {
      }
      if (n == static_cast<ssize_t>(sizeof received)) failure = received;
    }
    ::close(report[0]);
    if (pid < 0) return fail(Error::internal(fork_error));
    return Started{pid, failure};
  }

  // The workload's wait status: a sandbox's init passes it on (PID 1 cannot die of the workload's
  // signal), else it is the child's own.
  int workload_status(int child_status) {
    if (status_pipe_[0] < 0) return child_status;
    int status = 0;
    ssize_t n;
    while ((n = ::read(status_pipe_[0], &status, sizeof status)) < 0 && errno == EINTR) {
    }
    ::close(status_pipe_[0]);
    status_pipe_[0] = -1;
    return n == static_cast<ssize_t>(sizeof status) ? status : child_status;
  }

  void signal_ready() {
    if (ready_fd_ < 0) return;
    write_all(ready_fd_, std::string_view(&kShimReady, 1));
    ::close(ready_fd_);
    ready_fd_ = -1;
  }

  int finish(ExitRecord record) {
    const int code = record.exit_code;
    // Nobody else would learn how the run ended if this fails; stderr is /dev/null under an
    // agent, but useful when the shim is run by hand.
    if (auto written = write_exit_record(dir_, record); !written) {
      fmt::print(stderr, "gpurent shim: {}\n", written.error().message);
    }
    signal_ready();
    // A run is over when its main process is: whatever it left behind in its process group
    // (background daemons holding GPUs) ends with it. kill(0) would include this shim, whose work
    // is done. Only when setsid succeeded, so the group is the run's own and not the agent's.
    if (::getpgrp() == ::getpid()) ::kill(0, SIGKILL);
    return code;
  }

  static std::string errno_message(std::string_view call) {
    return fmt::format("{}: {}", call, std::strerror(errno));
  }

  static std::string failure_message(const ChildFailure& failure, const Launch& launch) {
    const char* reason = std::strerror(failure.error);
    switch (failure.stage) {
      case ChildFailure::kChdir:
        return fmt::format("cannot enter the working directory {}: {}", launch.cwd, reason);
      case ChildFailure::kUser:
        return fmt::format("cannot become the instance's user: {}", reason);
      case ChildFailure::kSandbox:
        return "cannot set up the run's sandbox (the reason is in the log above)";
      case ChildFailure::kExec:
        break;
    }
    return fmt::format("cannot execute '{}': {}", launch.command.front(), reason);
  }

  std::filesystem::path dir_;
  int ready_fd_;
  int log_fd_ = -1;
  uint64_t self_start_time_ = 0;
  int status_pipe_[2] = {-1, -1};  // a sandbox's init -> the shim: the workload's wait status
};

}  // namespace

int run_workload_shim(int argc, char** argv) {
  int ready_fd = -1;
  if (argc == 3) {
    const std::string_view arg = argv[2];
    const auto [ptr, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), ready_fd);
    if (ec != std::errc() || ptr != arg.data() + arg.size()) ready_fd = -1;
  }
  if (ready_fd < 0) {
    fmt::print(stderr, "usage: gpurent __shim <workload dir> <ready fd>\n");
    return 2;
  }
  // The workload shares the shim's process group, so a stop's SIGTERM (and a terminal's SIGINT or
  // SIGHUP) reaches both; the shim outlives it to record how the workload ended.
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) ::signal(sig, SIG_IGN);
  ::fcntl(ready_fd, F_SETFD, FD_CLOEXEC);
  return Shim(argv[1], ready_fd).run();
}

}  // namespace gpurent::agent
