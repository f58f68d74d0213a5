#include "agent/host.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace gpurent::agent {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

int host_cpu_count() { return static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))); }

int64_t host_memory_mb() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemTotal:") return kib / 1024;
    meminfo.ignore(64, '\n');
  }
  return 0;
}

int64_t free_disk_gb(const std::filesystem::path& path) {
  struct statvfs info {};
  if (::statvfs(path.c_str(), &info) != 0) return 0;
  // f_bavail, not f_bfree: the blocks reserved for root are not there for workloads.
  return static_cast<int64_t>((static_cast<uint64_t>(info.f_bavail) * info.f_frsize) >> 30);
}

std::string local_address_toward(std::string_view server_url) {
  std::string_view rest = server_url.substr(0, server_url.find(','));  // the first of several
  if (const auto scheme = rest.find("://"); scheme != std::string_view::npos) {
    rest.remove_prefix(scheme + 3);
  }
  rest = rest.substr(0, rest.find('/'));
  std::string host, port = "80";
  if (rest.starts_with('[')) {  // [v6]:port
    const auto close = rest.find(']');
    if (close == std::string_view::npos) return "";
    host = rest.substr(1, close - 1);
    if (rest.substr(close + 1).starts_with(':')) port = rest.substr(close + 2);
  } else {
    const auto colon = rest.rfind(':');
    host = rest.substr(0, colon);
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
  }
  if (host.empty() || port.empty()) return "";

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return "";
  std::string address;
  for (addrinfo* candidate = found; candidate && address.empty(); candidate = candidate->ai_next) {
    const int fd = ::socket(candidate->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    if (::connect(fd, candidate->ai_addr, candidate->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* raw =
          local.ss_family == AF_INET
              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
              : &reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr;
      if (::inet_ntop(local.ss_family, raw, text, sizeof text)) address = text;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return address;
}

}  // namespace gpurent::agent
