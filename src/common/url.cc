#include "common/url.h"

#include <fmt/format.h>

#include <cctype>

namespace gpurent {

std::string percent_encode(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out += fmt::format("%{:02X}", byte);
    }
  }
  return out;
}

}  // namespace gpurent
