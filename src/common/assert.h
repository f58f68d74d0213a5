// Invariants asserted where they hold.
//
// GPURENT_ASSERT(condition, format, args...) is always on, for cheap checks whose failure means
// that the owner of some state has corrupted it: it logs the place, the condition and the
// message, and aborts. Carrying on would write the corrupt state to the store and answer from it;
// a restart recovers from the last durable state instead.
//
// GPURENT_EXPENSIVE_CHECK(status_expression) evaluates a Status-returning whole-state check (the
// controller's check_invariants(), O(state)) only where expensive checks are on: in the unit
// tests, in `gpurent simulate`, and in any process started with GPURENT_EXPENSIVE_CHECKS=1 in its
// environment (the end-to-end tests start every server that way). A failed check aborts as above.
#pragma once

#include <string>

#include <fmt/format.h>

namespace gpurent {

[[noreturn]] void assertion_failed(const char* condition, const char* file, int line,
                                   const std::string& message);

// Whether expensive checks run: set_expensive_checks(), else GPURENT_EXPENSIVE_CHECKS=1 (read
// once). Thread-safe.
bool expensive_checks();
void set_expensive_checks(bool on);

}  // namespace gpurent

#define GPURENT_ASSERT(condition, ...)                                                         \
  do {                                                                                         \
    if (!(condition)) [[unlikely]] {                                                           \
      ::gpurent::assertion_failed(#condition, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
    }                                                                                          \
  } while (false)

#define GPURENT_EXPENSIVE_CHECK(status_expression)                              \
  do {                                                                          \
    if (::gpurent::expensive_checks()) {                                        \
      const auto gpurent_checked_ = (status_expression);                        \
      GPURENT_ASSERT(gpurent_checked_, "{}", gpurent_checked_.error().message); \
    }                                                                           \
  } while (false)
