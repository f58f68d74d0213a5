#include "agent/vm/unix_socket.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace gpurent::agent {

std::optional<sockaddr_un> unix_address(const std::filesystem::path& socket) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = socket.string();
  if (path.size() >= sizeof(address.sun_path)) return std::nullopt;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

Result<int> connect_unix(const std::filesystem::path& socket, std::chrono::milliseconds timeout) {
  const auto unavailable = [&](std::string_view why) {
    return fail(Error{ErrorKind::kUnavailable, "socket_unavailable",
                      fmt::format("{}: {}", socket.string(), why)});
  };
  // Connected through the descriptor of the name itself: a link put there in its place is no
  // socket, and nothing can swap the name between the check and the connect.
  const int held = ::open(socket.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (held < 0) return unavailable(std::strerror(errno));
  struct stat st {};
  if (::fstat(held, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    ::close(held);
    return unavailable("not a socket");
  }
  const auto address = unix_address(fmt::format("/proc/self/fd/{}", held));
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  // A unix connect waits while the listener's backlog is full, as long as the send timeout lets it
  // (EAGAIN after): a listener put there that never accepts cannot hold the agent.
  const auto wait_at_most = [fd](std::chrono::milliseconds wait) {
    const timeval limit{.tv_sec = static_cast<time_t>(wait.count() / 1000),
                        .tv_usec = static_cast<suseconds_t>(wait.count() % 1000 * 1000)};
    return ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit) == 0;
  };
  const bool connected =
      fd >= 0 && wait_at_most(timeout) &&
      ::connect(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof(*address)) == 0 &&
      wait_at_most(std::chrono::milliseconds(0));  // the session's writes: no limit, as before
  const int err = errno;
  ::close(held);
  if (!connected) {
    if (fd >= 0) ::close(fd);
    return unavailable(std::strerror(err));
  }
  return fd;
}

Result<int> listen_unix(const std::filesystem::path& socket) {
  const auto address = unix_address(socket);
  if (!address) {
    return fail(Error::internal(fmt::format("{}: too long for a unix socket", socket.string())));
  }
  std::error_code ec;
  std::filesystem::remove(socket, ec);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof(*address)) != 0 ||
      ::listen(fd, 1) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    return fail(Error::internal(
        fmt::format("cannot listen on {}: {}", socket.string(), std::strerror(err))));
  }
  return fd;
}

void hang_up(const std::filesystem::path& socket) {
  // Refused: the helper is gone already. Through the name itself: passt's lies in QEMU's directory.
  if (const auto fd = connect_unix(socket)) ::close(*fd);
}

}  // namespace gpurent::agent
