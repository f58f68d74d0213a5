// A transparent hash for unordered maps keyed by std::string, so that a lookup by string_view
// builds no string (pair it with std::equal_to<>).
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

namespace gpurent {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

}  // namespace gpurent
