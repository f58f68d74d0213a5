// CPU, memory and process-count limits of sandboxed process runs (sandbox.h), through the kernel's
// control groups.
//
// detect_host() finds the cpu, memory and pids controllers below the agent's own cgroup:
//   - cgroup v2, when its unified hierarchy offers cpu and memory there. A v2 cgroup that holds
//     processes cannot hand controllers to children, so unless the agent is at the root it first
//     moves itself into a child `agent/`; the runs live in a sibling `workloads/<name>/`.
//   - else cgroup v1 (separate cpu, memory and pids hierarchies, as on hosts still booted with
//     them), each run in `gpurent-workloads/<name>/` of each hierarchy.
// A host with neither gets no limits; the agent says so at registration (node isolation).
//
// create() writes a run's limits: cpu cores as a CFS quota per 100 ms period (cpu.max, or
// cpu.cfs_quota_us), memory as a hard limit (memory.max, memory.limit_in_bytes; the run is killed
// by the kernel's OOM killer beyond it), and at most kMaxRunProcesses processes. Zero means no
// limit for CPU and memory. The run joins by writing to cgroup.procs of each directory returned.
//
// Thread-safety: const methods only touch the file system; one reconcile thread calls them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpurent::agent {

inline constexpr int64_t kMaxRunProcesses = 32768;
inline constexpr int64_t kCpuPeriodUs = 100000;

struct CgroupLimits {
  int cpu = 0;               // cores; 0: none
  int64_t memory_bytes = 0;  // 0: none
};

class Cgroups {
 public:
  enum class Version { kV1, kV2 };

  // From the host's /proc/self/mounts and /proc/self/cgroup; v2 preparation moves the calling
  // process (see above). Nothing when no usable hierarchy is found; `why_not` then says why.
  static std::optional<Cgroups> detect_host(std::string* why_not);
  // The same from given texts, for tests on a directory tree made to look like cgroupfs.
  static std::optional<Cgroups> detect(std::string_view mounts, std::string_view self_cgroup,
                                       std::string* why_not);

  // Makes (or reuses) the run's cgroups and writes the limits; the directories to join.
  Result<std::vector<std::string>> create(std::string_view name, const CgroupLimits& limits) const;
  // Deletes the run's cgroups (they must be empty: the run has ended). Missing ones are fine.
  Status remove(std::string_view name) const;

  Version version() const { return version_; }
  std::string description() const;

 private:
  struct Hierarchy {
    std::filesystem::path base;  // where runs' cgroups are made
    bool cpu = false, memory = false, pids = false;
  };
  Cgroups(Version version, std::vector<Hierarchy> hierarchies)
      : version_(version), hierarchies_(std::move(hierarchies)) {}

  Version version_;
  std::vector<Hierarchy> hierarchies_;
};

}  // namespace gpurent::agent
