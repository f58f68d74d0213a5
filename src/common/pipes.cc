#include "common/pipes.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace gpurent {

void become_command_child(int stdin_fd, int stdout_fd, int stderr_fd) {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::setsid();
  ::dup2(stdin_fd, 0);
  ::dup2(stdout_fd, 1);
  ::dup2(stderr_fd, 2);
}

bool drain_pipes(int first, const PipeSink& on_first, int second, const PipeSink& on_second,
                 std::optional<std::chrono::steady_clock::time_point> deadline) {
  pollfd fds[2] = {{first, POLLIN, 0}, {second, POLLIN, 0}};
  const PipeSink* sinks[2] = {&on_first, &on_second};
  bool in_time = true;
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    int timeout_ms = -1;
    if (deadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(
          *deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        in_time = false;
        break;
      }
      timeout_ms = static_cast<int>(std::min<int64_t>(left.count(), 60'000));
    }
    if (::poll(fds, 2, timeout_ms) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[65536];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        continue;
      }
      (*sinks[i])(std::string_view(buffer, static_cast<size_t>(n)));
    }
  }
  for (const pollfd& fd : fds) {
    if (fd.fd >= 0) ::close(fd.fd);
  }
  return in_time;
}

}  // namespace gpurent
