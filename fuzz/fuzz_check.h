// What the harnesses share: FUZZ_CHECK, which reports a broken invariant and aborts (libFuzzer
// then saves the input as a crash), and the helpers that cut one input into several values.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#define FUZZ_CHECK(condition, ...)                                                           \
  do {                                                                                       \
    if (!(condition)) [[unlikely]] {                                                         \
      std::fprintf(stderr, "fuzz invariant failed at %s:%d: %s\n  %s\n", __FILE__, __LINE__, \
                   #condition, ::fmt::format(__VA_ARGS__).c_str());                          \
      std::abort();                                                                          \
    }                                                                                        \
  } while (false)

namespace gpurent::fuzz {

// The bytes of one fuzzer input, taken apart front to back.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}

  bool empty() const { return rest_.empty(); }
  // The unread bytes; the input is then used up.
  std::string_view rest() {
    const std::string_view out = rest_;
    rest_ = {};
    return out;
  }
  // One byte (0 when none is left).
  uint8_t byte() {
    if (rest_.empty()) return 0;
    const auto out = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return out;
  }
  // A piece up to the next `separator` (which is consumed), or the rest.
  std::string_view until(char separator) {
    const size_t at = rest_.find(separator);
    const std::string_view out = rest_.substr(0, at);
    rest_ = at == std::string_view::npos ? std::string_view() : rest_.substr(at + 1);
    return out;
  }

 private:
  std::string_view rest_;
};

// A value for messages: printable, escaped, cut at 200 bytes.
inline std::string shown(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 200)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '\\') {
      out += c;
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
  }
  if (text.size() > 200) out += "...";
  return out;
}

}  // namespace gpurent::fuzz
