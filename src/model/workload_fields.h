// The rules for what tenants and operators may put in a workload's runtime fields (image,
// environment), shared by the API's request parser and the template catalog, so that a template
// can never smuggle in what a request could not.
#pragma once

#include <cstddef>
#include <string_view>

namespace gpurent::model {

// Docker's limit on an image reference (name, tag and digest).
inline constexpr size_t kMaxImageLength = 512;

// An image reference: registry/name:tag or @digest characters only (no spaces, no options).
bool valid_image(std::string_view image);
// A POSIX shell variable name: [A-Za-z_][A-Za-z0-9_]*.
bool valid_env_name(std::string_view name);
// Variables the platform sets on every workload (GPURENT_*, the GPU and MPS variables): a
// request or template that sets them is refused, so a workload can trust them.
bool set_by_platform(std::string_view variable);

}  // namespace gpurent::model
