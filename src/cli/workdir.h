// `--workdir DIR` (launch, job submit): the local directory packed as a tar.gz for the server's
// uploads (server/upload_store.h), which the node unpacks into the instance's home before its
// command starts (agent/runtime/workdir.h), as SkyPilot's workdir does.
//
// Packed with the system's GNU tar: the directory's contents (not the directory itself), without
// version-control directories (--exclude-vcs), and without what DIR/.gpurentignore names (one
// tar --exclude pattern a line, e.g. `data/*.bin`, `__pycache__`). At most
// model::kMaxWorkdirBytes compressed: larger data belongs in a volume.
#pragma once

#include <filesystem>
#include <string>

#include "cli/context.h"
#include "client/api_client.h"
#include "common/result.h"

namespace gpurent::cli {

inline constexpr std::string_view kWorkdirIgnoreFile = ".gpurentignore";

// The tar.gz bytes. Errors: not a directory (kInvalidArgument "invalid_workdir"), too large, or
// tar failed (its message).
Result<std::string> pack_workdir(const std::filesystem::path& dir);

// Packs and uploads the directory; says so on stderr; returns the upload's id for the spec.
Result<std::string> upload_workdir(Context& ctx, client::ApiClient& api,
                                   const std::filesystem::path& dir);

}  // namespace gpurent::cli
