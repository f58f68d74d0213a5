#include "common/assert.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace gpurent {
namespace {

// -1: not decided yet (the environment is read on first use); 0 or 1 after.
std::atomic<int> expensive{-1};

}  // namespace

void assertion_failed(const char* condition, const char* file, int line,
                      const std::string& message) {
  const std::string text =
      fmt::format("invariant broken at {}:{}: {}: {}", file, line, condition, message);
  spdlog::critical("{}", text);
  spdlog::shutdown();                // flushes the log before the abort
  fmt::print(stderr, "{}\n", text);  // also where a supervisor or a test reads a crash
  std::abort();
}

bool expensive_checks() {
  int on = expensive.load(std::memory_order_relaxed);
  if (on < 0) {
    const char* value = std::getenv("GPURENT_EXPENSIVE_CHECKS");
    on = value != nullptr && std::strcmp(value, "1") == 0 ? 1 : 0;
    expensive.store(on, std::memory_order_relaxed);
  }
  return on == 1;
}

void set_expensive_checks(bool on) { expensive.store(on ? 1 : 0, std::memory_order_relaxed); }

}  // namespace gpurent
