// Time for the whole system.
//
// The deterministic core never reads the wall clock: it is handed a Clock. The server hands it a
// SystemClock; tests and `gpurent simulate` hand it a ManualClock they advance themselves.
// Timestamps are milliseconds since the Unix epoch (UTC); billing works in whole seconds of them.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpurent {

using Millis = std::chrono::milliseconds;
using Timestamp = std::chrono::sys_time<Millis>;

inline int64_t to_unix_ms(Timestamp t) { return t.time_since_epoch().count(); }
inline Timestamp from_unix_ms(int64_t ms) { return Timestamp(Millis(ms)); }

// RFC 3339 in UTC with milliseconds: "2026-11-30T15:26:13.123Z".
std::string format_rfc3339(Timestamp t);
// Accepts what format_rfc3339 writes, with or without the fraction.
std::optional<Timestamp> parse_rfc3339(std::string_view text);

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Timestamp now() const = 0;
};

class SystemClock final : public Clock {
 public:
  Timestamp now() const override;
};

// A clock that moves only when told to. Not thread-safe: it belongs to one test or simulation.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Timestamp start) : now_(start) {}
  Timestamp now() const override { return now_; }
  void advance(Millis by) { now_ += by; }
  void set(Timestamp t) { now_ = t; }

 private:
  Timestamp now_;
};

}  // namespace gpurent
