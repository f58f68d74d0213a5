#include "api/read_request.h"

#include <algorithm>

#include <fmt/format.h>

namespace gpurent::api {

Error unknown_name(std::string_view member, std::string_view, std::string_view names) {
  return invalid_field(member, fmt::format("must be one of {}", names));
}

namespace read_request_detail {

Status refuse_unknown_members(const Json& body, const std::vector<std::string_view>& known) {
  for (const auto& [key, value] : body.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return fail(Error::invalid("unknown_field", fmt::format("unknown field '{}'", key)));
    }
  }
  return {};
}

}  // namespace read_request_detail
}  // namespace gpurent::api
