// Facts about the machine the agent runs on, for its registration: name, CPUs, memory, free disk,
// the address its peers reach it at.
// Each is read when asked (nothing cached) and never fails: what cannot be read is reported as the
// neutral value documented on the function. Thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace gpurent::agent {

std::string host_name();   // "localhost" when the kernel has none
int host_cpu_count();      // online CPUs, at least 1
int64_t host_memory_mb();  // MemTotal; 0 when /proc/meminfo cannot be read
// Space available to unprivileged writers on the file system holding `path`, in GiB (rounded down);
// 0 when it cannot be read.
int64_t free_disk_gb(const std::filesystem::path& path);
// The local IP address this host uses to reach the server at `server_url` ("http://host:port"; of
// several, separated by commas, the first):
// the source address the kernel picks for a route to it (a UDP socket is connected, nothing is
// sent). Multi-node jobs get it as MASTER_ADDR, so it must be one the other nodes can reach:
// the interface facing the server usually is. "" when the URL or the route cannot be resolved.
std::string local_address_toward(std::string_view server_url);

}  // namespace gpurent::agent
