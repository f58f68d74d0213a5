// Facts about the machine the agent runs on, for its registration: name, CPUs, memory, free disk.
// Each is read when asked (nothing cached) and never fails: what cannot be read is reported as the
// neutral value documented on the function. Thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace gpurent::agent {

std::string host_name();   // "localhost" when the kernel has none
int host_cpu_count();      // online CPUs, at least 1
int64_t host_memory_mb();  // MemTotal; 0 when /proc/meminfo cannot be read
// Space available to unprivileged writers on the file system holding `path`, in GiB (rounded down);
// 0 when it cannot be read.
int64_t free_disk_gb(const std::filesystem::path& path);

}  // namespace gpurent::agent
