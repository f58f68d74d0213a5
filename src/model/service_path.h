// The path under which the server serves an instance's HTTP services (InstanceSpec::services):
// /i/<instance_id>/<service>/<rest>. Tenants' browsers and clients use it on the server; the server
// forwards it unchanged to the node's agent, which forwards it to the service (whose base URL it
// is: GPURENT_BASE_URL_<NAME>), so the service's own links stay valid through both hops.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace gpurent::model {

inline constexpr std::string_view kServicePathPrefix = "/i/";

struct ServicePath {
  std::string instance_id;
  std::string service;
  // "/i/<id>/<service>" without the slash after the service: the base URL needs it (a browser
  // resolves the service's relative links against it), so the answer is a redirect there.
  bool needs_slash = false;
};

// "/i/<id>/<service>/..." (decoded path). Errors (kNotFound, "route_not_found"): not under the
// prefix, an empty or over-long instance id, or a service that is not a valid service name.
Result<ServicePath> parse_service_path(std::string_view path);

// "/i/<instance_id>/<service>/"
std::string service_base_url(std::string_view instance_id, std::string_view service);

}  // namespace gpurent::model
