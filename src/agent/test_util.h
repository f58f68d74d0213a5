// Helpers shared by the agent's tests: a temporary directory and polling for a condition with a
// deadline (never a fixed sleep as synchronisation).
#pragma once

#include <stdlib.h>  // mkdtemp

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

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

}  // namespace gpurent::agent::testing
