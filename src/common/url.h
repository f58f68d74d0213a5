// Pieces of URLs built from values that may hold any byte.
#pragma once

#include <string>
#include <string_view>

namespace gpurent {

// Percent-encodes everything but RFC 3986's unreserved characters, so that a value can never
// change the shape of a path or query it is put in.
std::string percent_encode(std::string_view value);

}  // namespace gpurent
