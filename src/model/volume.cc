#include "model/volume.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace gpurent::model {
namespace {

bool id_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

// Whether `inner` is `outer` or a path under it (both normalised).
bool within(std::string_view inner, std::string_view outer) {
  return inner == outer ||
         (inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '/');
}

Status check_path(std::string_view path) {
  const auto bad = [&](std::string_view why) {
    return fail(Error::invalid("invalid_field",
                               fmt::format("mount_path '{}' {}", path.substr(0, 64), why)));
  };
  if (path.empty() || path.front() != '/') return bad("must be an absolute path");
  if (path.size() > kMaxMountPathLength) {
    return bad(fmt::format("is longer than {} characters", kMaxMountPathLength));
  }
  if (path == "/") return bad("may not be the root directory");
  if (path.find_first_of(std::string_view(":,\0", 3)) != std::string_view::npos) {
    return bad("may not contain ':', ',' or NUL");
  }
  if (std::any_of(path.begin(), path.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20; })) {
    return bad("may not contain control characters");
  }
  for (size_t start = 1; start <= path.size();) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") {
      return bad("must be normalised (no empty, '.' or '..' parts, no trailing '/')");
    }
    start = end + 1;
  }
  for (std::string_view system : {"/proc", "/sys", "/dev"}) {
    if (within(path, system)) return bad(fmt::format("may not be under {}", system));
  }
  if (path == "/workspace") return bad("is where the instance's own disk is mounted");
  return {};
}

}  // namespace

std::string_view to_string(VolumeState state) {
  switch (state) {
    case VolumeState::kAvailable:
      return "available";
    case VolumeState::kDeleted:
      return "deleted";
  }
  return "unknown";
}

bool parse_volume_state(std::string_view text, VolumeState* out) {
  for (auto state : {VolumeState::kAvailable, VolumeState::kDeleted}) {
    if (to_string(state) == text) {
      *out = state;
      return true;
    }
  }
  return false;
}

bool valid_volume_name(std::string_view name) {
  // A letter or digit first: "." and ".." (and hidden-file names) are not names a path may take.
  return !name.empty() && name.size() <= kMaxVolumeNameLength &&
         std::isalnum(static_cast<unsigned char>(name.front())) &&
         std::all_of(name.begin(), name.end(), id_char);
}

bool valid_volume_id(std::string_view id) {
  return !id.empty() && id.size() <= 128 && id.front() != '.' &&
         std::all_of(id.begin(), id.end(), id_char);
}

Status validate_volume_mounts(const std::vector<VolumeMount>& mounts) {
  if (mounts.size() > kMaxVolumeMounts) {
    return fail(Error::invalid("invalid_field",
                               fmt::format("at most {} volumes per instance", kMaxVolumeMounts)));
  }
  for (size_t i = 0; i < mounts.size(); ++i) {
    const VolumeMount& mount = mounts[i];
    if (!valid_volume_id(mount.volume_id)) {
      return fail(Error::invalid("invalid_field",
                                 fmt::format("volume_id '{}' is not a volume id",
                                             std::string_view(mount.volume_id).substr(0, 64))));
    }
    GPURENT_CHECK(check_path(mount.mount_path));
    for (size_t j = 0; j < i; ++j) {
      if (mounts[j].volume_id == mount.volume_id) {
        return fail(Error::invalid("invalid_field",
                                   fmt::format("volume {} is mounted twice", mount.volume_id)));
      }
      if (within(mount.mount_path, mounts[j].mount_path) ||
          within(mounts[j].mount_path, mount.mount_path)) {
        return fail(Error::invalid(
            "invalid_field",
            fmt::format("mount paths {} and {} overlap", mounts[j].mount_path, mount.mount_path)));
      }
    }
  }
  return {};
}

}  // namespace gpurent::model
