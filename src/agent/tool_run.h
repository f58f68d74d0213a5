// Runs a helper program the agent relies on (a tool of the NVIDIA Container Toolkit asked for its
// version, gpurent-gpubench measuring the GPUs) and collects what it prints, with a deadline and a
// bound on the output, so that a hung or chatty tool can neither stall nor exhaust the agent.
//
// The tool gets the agent's environment with `env` on top, /dev/null as its input, none of the
// agent's other file descriptors, and no blocked signals (the agent blocks SIGINT and SIGTERM in
// every thread). At the deadline, once the output reaches max_output_bytes, or once it closes its
// output, it is killed: a tool is done when it has said what it has to say. Thread-safe: each call
// its own child.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace gpurent::agent {

struct ToolRun {
  std::vector<std::string> argv;  // argv[0] is found on PATH when it has no slash
  std::map<std::string, std::string> env;
  std::chrono::milliseconds timeout{5000};
  size_t max_output_bytes = 64 * 1024;
  bool with_stderr = true;  // false: stderr goes to the agent's own
};

struct ToolOutput {
  std::string output;
  bool timed_out = false;  // killed at the deadline: the output is what came before it
};

// nullopt when the tool cannot be run at all (not there, not executable).
std::optional<ToolOutput> run_tool(const ToolRun& run);

// Ids 0..count-1 inside a user namespace are host_first..host_first+count-1 on the host.
struct IdMapping {
  uint32_t host_first = 0;
  uint32_t count = 0;
};

// A directory that a helper's mount namespace covers with an empty tmpfs (mode 0711, read-only
// once made) but for `reveal`, paths below it bind-mounted back at their own paths: the helper
// reaches nothing else of what lay there, and passes the directory whatever its mode.
struct CoveredDirectory {
  std::filesystem::path directory;
  std::vector<std::filesystem::path> reveal;
};

struct RunAs {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;  // supplementary
};

struct DetachedRun {
  std::vector<std::string> argv;  // argv[0] is found on PATH when it has no slash
  std::filesystem::path log;      // its output, appended (made 0600)
  int pass_fd = -1;               // given to it as its descriptor 3 (a listening socket); -1: none
  // Set: this directory is its /tmp, in a mount namespace of its own that root makes before the
  // user namespace, so that it reaches a directory below ones only the node's root may enter.
  std::filesystem::path private_tmp;
  // Set: it runs as root of a user namespace of its own, with these ids (and the same gids), and
  // no supplementary groups: root there, and on the host only what those ids may do.
  std::optional<IdMapping> user_namespace;
  // Set (not with user_namespace): it runs as this user, with no capabilities and no way to gain
  // any (no_new_privs: a set-uid program gives it nothing).
  std::optional<RunAs> run_as;
  // In a mount namespace of its own (as for private_tmp), these directories (none below another)
  // are covered: the agent's data directory, with the node's credential, for one.
  std::vector<CoveredDirectory> covers;
  // Non-zero: how much memory it may lock (RLIMIT_MEMLOCK, QEMU pinning a VM's for VFIO).
  uint64_t memlock_bytes = 0;
  std::optional<mode_t> umask;  // set: its umask; else the agent's
  // Set: its whole environment ("NAME=value"); else the agent's, which holds the agent's secrets
  // (its join token among them).
  std::optional<std::vector<std::string>> environment;
};

// Starts a helper that outlives the call, and the agent too (virtiofsd beside its QEMU), and
// returns its pid once it runs the program: in a session of its own and no child of the agent's
// (it is left to init, which reaps it), with the agent's environment, /dev/null as its input, none
// of the agent's other file descriptors and no blocked signals. Errors: kInternal with the
// system's words when it cannot be run (argv[0] not found on PATH, not executable, no user
// namespace, a path to reveal that is missing or not below its cover) or its log cannot be opened.
Result<pid_t> spawn_detached(const DetachedRun& run);

}  // namespace gpurent::agent
