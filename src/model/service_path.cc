#include "model/service_path.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "model/instance.h"

namespace gpurent::model {

Result<ServicePath> parse_service_path(std::string_view path) {
  const auto not_found = [&] {
    return fail(Error{ErrorKind::kNotFound, "route_not_found",
                      fmt::format("no route {}", path.substr(0, 200))});
  };
  if (!path.starts_with(kServicePathPrefix)) return not_found();
  std::string_view rest = path.substr(kServicePathPrefix.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return not_found();
  ServicePath out;
  const std::string_view id = rest.substr(0, slash);
  const bool id_ok =
      !id.empty() && id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
      });
  if (!id_ok) return not_found();
  rest.remove_prefix(slash + 1);
  const size_t end = rest.find('/');
  const std::string_view service = rest.substr(0, end);
  if (!valid_service_name(service)) return not_found();
  out.instance_id = std::string(id);
  out.service = std::string(service);
  out.needs_slash = end == std::string_view::npos;
  return out;
}

std::string service_base_url(std::string_view instance_id, std::string_view service) {
  return fmt::format("{}{}/{}/", kServicePathPrefix, instance_id, service);
}

}  // namespace gpurent::model
