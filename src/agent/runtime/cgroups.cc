#include "agent/runtime/cgroups.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "agent/files.h"

namespace gpurent::agent {
namespace {

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(separator, start), text.size());
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

bool has(const std::vector<std::string_view>& items, std::string_view item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// Control files are written with one write(2): the kernel reads a value per write, and an error
// (a limit below the current use, a controller not enabled) comes back from that write.
Status write_control(const std::filesystem::path& path, std::string_view value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  const bool written =
      fd >= 0 && ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  const int error = errno;
  if (fd >= 0) ::close(fd);
  if (written) return {};
  return fail(Error::internal(
      fmt::format("cannot write '{}' to {}: {}", value, path.string(), std::strerror(error))));
}

Status make_directory(const std::filesystem::path& path) {
  if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return {};
  return fail(Error::internal(fmt::format("mkdir {}: {}", path.string(), std::strerror(errno))));
}

// cgroup v2: enables the controllers for the children of `parent`.
Status delegate(const std::filesystem::path& parent, bool pids) {
  return write_control(parent / "cgroup.subtree_control",
                       pids ? "+cpu +memory +pids" : "+cpu +memory");
}

}  // namespace

std::optional<Cgroups> Cgroups::detect_host(std::string* why_not) {
  const auto mounts = read_file("/proc/self/mounts", 1 << 20);
  const auto self = read_file("/proc/self/cgroup", 1 << 16);
  if (!mounts || !self) {
    *why_not = "cannot read /proc/self/mounts or /proc/self/cgroup";
    return std::nullopt;
  }
  return detect(*mounts, *self, why_not);
}

std::optional<Cgroups> Cgroups::detect(std::string_view mounts, std::string_view self_cgroup,
                                       std::string* why_not) {
  // Our cgroup in each hierarchy: "0::/path" (v2), "N:cpu,cpuacct:/path" (v1).
  std::string v2_path;
  std::map<std::string, std::string, std::less<>> v1_paths;  // by controller
  for (const auto line : split(self_cgroup, '\n')) {
    const auto fields = split(line, ':');
    if (fields.size() < 3) continue;
    const std::string path(line.substr(fields[0].size() + fields[1].size() + 2));
    if (fields[0] == "0" && fields[1].empty()) v2_path = path;
    for (const auto controller : split(fields[1], ',')) v1_paths.emplace(controller, path);
  }
  std::string v2_mount;
  std::map<std::string, std::string, std::less<>> v1_mounts;  // by controller
  for (const auto line : split(mounts, '\n')) {
    const auto fields = split(line, ' ');
    if (fields.size() < 4) continue;
    if (fields[2] == "cgroup2") v2_mount = fields[1];
    if (fields[2] != "cgroup") continue;
    for (const auto option : split(fields[3], ',')) {
      if (option == "cpu" || option == "memory" || option == "pids") {
        v1_mounts.emplace(option, fields[1]);
      }
    }
  }
  std::vector<std::string> reasons;
  if (!v2_mount.empty() && !v2_path.empty()) {
    const std::filesystem::path own = std::filesystem::path(v2_mount) / v2_path.substr(1);
    const auto controllers = read_file(own / "cgroup.controllers", 4096);
    const auto offered = split(
        controllers
            ? std::string_view(*controllers).substr(0, controllers->find_last_not_of('\n') + 1)
            : std::string_view(),
        ' ');
    if (has(offered, "cpu") && has(offered, "memory")) {
      const bool pids = has(offered, "pids");
      auto prepared = [&]() -> Status {
        if (v2_path != "/") {
          GPURENT_CHECK(make_directory(own / "agent"));
          GPURENT_CHECK(write_control(own / "agent" / "cgroup.procs", std::to_string(::getpid())));
        }
        GPURENT_CHECK(delegate(own, pids));
        GPURENT_CHECK(make_directory(own / "workloads"));
        return delegate(own / "workloads", pids);
      }();
      if (prepared) {
        return Cgroups(Version::kV2, {{own / "workloads", true, true, pids}});
      }
      reasons.push_back(fmt::format("cgroup v2: {}", prepared.error().message));
    } else {
      reasons.push_back(
          fmt::format("cgroup v2 offers no cpu and memory controllers at {}", own.string()));
    }
  }
  std::vector<Hierarchy> v1;
  for (const char* controller : {"cpu", "memory", "pids"}) {
    const auto mount = v1_mounts.find(controller);
    const auto path = v1_paths.find(controller);
    if (mount == v1_mounts.end() || path == v1_paths.end()) continue;
    Hierarchy hierarchy;
    hierarchy.base =
        std::filesystem::path(mount->second) / path->second.substr(1) / "gpurent-workloads";
    hierarchy.cpu = std::string_view(controller) == "cpu";
    hierarchy.memory = std::string_view(controller) == "memory";
    hierarchy.pids = std::string_view(controller) == "pids";
    if (auto made = make_directory(hierarchy.base); !made) {
      reasons.push_back(fmt::format("cgroup v1: {}", made.error().message));
      continue;
    }
    v1.push_back(std::move(hierarchy));
  }
  const auto offers = [&](bool Hierarchy::*controller) {
    return std::any_of(v1.begin(), v1.end(), [&](const Hierarchy& h) { return h.*controller; });
  };
  if (offers(&Hierarchy::cpu) && offers(&Hierarchy::memory)) return Cgroups(Version::kV1, v1);
  reasons.push_back("no cgroup v1 cpu and memory hierarchies");
  *why_not = fmt::format("{}", fmt::join(reasons, "; "));
  return std::nullopt;
}

Result<std::vector<std::string>> Cgroups::create(std::string_view name,
                                                 const CgroupLimits& limits) const {
  std::vector<std::string> dirs;
  for (const auto& hierarchy : hierarchies_) {
    const auto dir = hierarchy.base / std::string(name);
    GPURENT_CHECK(make_directory(dir));
    const bool v2 = version_ == Version::kV2;
    if (hierarchy.cpu) {
      if (v2) {
        GPURENT_CHECK(write_control(
            dir / "cpu.max", limits.cpu > 0
                                 ? fmt::format("{} {}", limits.cpu * kCpuPeriodUs, kCpuPeriodUs)
                                 : fmt::format("max {}", kCpuPeriodUs)));
      } else {
        GPURENT_CHECK(write_control(dir / "cpu.cfs_period_us", std::to_string(kCpuPeriodUs)));
        GPURENT_CHECK(write_control(
            dir / "cpu.cfs_quota_us",
            std::to_string(limits.cpu > 0 ? limits.cpu * kCpuPeriodUs : int64_t{-1})));
      }
    }
    if (hierarchy.memory) {
      const std::string memory =
          limits.memory_bytes > 0 ? std::to_string(limits.memory_bytes) : (v2 ? "max" : "-1");
      GPURENT_CHECK(write_control(dir / (v2 ? "memory.max" : "memory.limit_in_bytes"), memory));
    }
    if (hierarchy.pids) {
      GPURENT_CHECK(write_control(dir / "pids.max", std::to_string(kMaxRunProcesses)));
    }
    dirs.push_back(dir.string());
  }
  return dirs;
}

Status Cgroups::remove(std::string_view name) const {
  for (const auto& hierarchy : hierarchies_) {
    const auto dir = hierarchy.base / std::string(name);
    if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
      return fail(Error::internal(fmt::format("rmdir {}: {}", dir.string(), std::strerror(errno))));
    }
  }
  return {};
}

std::string Cgroups::description() const {
  return version_ == Version::kV2 ? "cgroup v2" : "cgroup v1";
}

}  // namespace gpurent::agent
