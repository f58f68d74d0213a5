// Helpers shared by the agent's tests: a temporary directory and polling for a condition with a
// deadline (never a fixed sleep as synchronisation).
#pragma once

#include <stdlib.h>  // mkdtemp

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "agent/runtime/runtime.h"

namespace gpurent::agent::testing {

// A fresh directory under the system's temp dir, removed with everything in it afterwards.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "gpurent-agent-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data()) ? pattern : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    // The process runtime's default home for instances, beside a data directory.
    std::filesystem::remove_all(path_.string() + "-instances", ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Re-evaluates condition every few milliseconds until it holds or timeout passes; returns whether
// it held.
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// The pid of a process whose program's name starts with `program` and whose command line holds
// `argument` (a helper serving a socket: passt beside its VM); 0 when there is none.
inline pid_t process_with(std::string_view program, std::string_view argument) {
  std::error_code ec;
  for (const auto& process : std::filesystem::directory_iterator("/proc", ec)) {
    std::ifstream file(process.path() / "cmdline");
    const std::string command((std::istreambuf_iterator<char>(file)),
                              std::istreambuf_iterator<char>());
    const std::string name =
        std::filesystem::path(command.substr(0, command.find('\0'))).filename();
    if (!command.empty() && name.starts_with(program) &&
        command.find(argument) != std::string::npos) {
      return std::atoi(process.path().filename().c_str());
    }
  }
  return 0;
}

// A run of `sh -c script`.
inline model::WorkloadSpec shell(std::string instance_id, std::string script, int64_t run = 1) {
  model::WorkloadSpec spec;
  spec.instance_id = std::move(instance_id);
  spec.run = run;
  spec.command = {"sh", "-c", std::move(script)};
  return spec;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

// Polls the runtime until the run has exited: the run, or nullptr if it did not exit in time.
inline const Workload* exited_run(Runtime& runtime, const WorkloadKey& key) {
  const bool exited = eventually([&] {
    runtime.poll();
    const Workload* w = runtime.find(key);
    return w && w->phase == model::WorkloadPhase::kExited;
  });
  return exited ? runtime.find(key) : nullptr;
}

}  // namespace gpurent::agent::testing
