#include "agent/host.h"

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

}  // namespace gpurent::agent
