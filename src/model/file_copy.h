// `gpurent cp`: a tenant's upload (a tar.gz, server/upload_store.h) unpacked into a running
// instance or a volume, where the server and the node agree:
//
//   POST /v1/instances/{id}/files?upload=U&path=P   -> the node API, POST /v1/node/files
//   POST /v1/volumes/{id}/files?upload=U&path=P     -> the node API, POST /v1/node/volume-files
//   -> 200 {"path", "files", "directories", "links", "bytes", "names", "names_truncated"}
//
// P is a directory, made when missing: "" (the instance's home, the volume's root), a path
// relative to it, or an absolute one (for an instance: inside its home or a volume it mounts; for
// a volume: from its root). The archive's members land below P. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/field_table.h"
#include "common/json.h"
#include "common/result.h"
#include "model/json_form.h"

namespace gpurent::model {

inline constexpr size_t kMaxCopyPathLength = 1024;
inline constexpr size_t kMaxCopiedNames = 100;  // names listed in a copy's answer

// Upload ids are made by the server ("u-" and lowercase base32): anything else names no upload,
// and never a path.
bool valid_upload_id(std::string_view id);

// A copy's destination as the tenant gives it. Errors (kInvalidArgument "invalid_path"): longer
// than kMaxCopyPathLength, a control character, or a '..' component (a copy never climbs).
Status check_copy_path(std::string_view path);

// The path's components without empty and "." ones ("/a//./b/" -> {"a", "b"}).
std::vector<std::string> path_components(std::string_view path);

// What a copy wrote.
struct CopyResult {
  std::string path;  // the destination directory, as the instance sees it ("/" a volume's root)
  int64_t files = 0;
  int64_t directories = 0;
  int64_t links = 0;               // symbolic and hard links
  int64_t bytes = 0;               // of the regular files
  std::vector<std::string> names;  // the first kMaxCopiedNames members, relative to `path`
  bool names_truncated = false;
};

template <class V, schema::Of<CopyResult> S>
void fields(V& visit, S& x) {
  visit("path", x.path);
  visit("files", x.files);
  visit("directories", x.directories);
  visit("links", x.links);
  visit("bytes", x.bytes);
  visit("names", x.names);
  visit("names_truncated", x.names_truncated);
}

}  // namespace gpurent::model
