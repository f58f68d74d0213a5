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

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

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

}  // namespace gpurent::agent
