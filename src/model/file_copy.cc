#include "model/file_copy.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpurent::model {

bool valid_upload_id(std::string_view id) {
  return id.size() > 2 && id.size() <= 64 && id.starts_with("u-") &&
         std::all_of(id.begin() + 2, id.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
}

Status check_copy_path(std::string_view path) {
  if (path.size() > kMaxCopyPathLength) {
    return fail(Error::invalid("invalid_path", fmt::format("the destination path is longer than "
                                                           "{} characters",
                                                           kMaxCopyPathLength)));
  }
  if (std::any_of(path.begin(), path.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return fail(Error::invalid("invalid_path", "the destination path has a control character"));
  }
  for (const auto& component : path_components(path)) {
    if (component == "..") {
      return fail(Error::invalid(
          "invalid_path",
          fmt::format("destination '{}' climbs out with '..': name a directory inside the "
                      "instance's home or the volume",
                      path)));
    }
  }
  return {};
}

std::vector<std::string> path_components(std::string_view path) {
  std::vector<std::string> components;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    if (!part.empty() && part != ".") components.emplace_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return components;
}

}  // namespace gpurent::model
