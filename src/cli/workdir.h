// Local files packed as a tar.gz for the server's uploads (server/upload_store.h):
// - `--workdir DIR` (launch, job submit): the node unpacks it into the instance's home before its
//   command starts (agent/runtime/workdir.h), as SkyPilot's workdir does;
// - `gpurent cp SOURCE TARGET:DEST`: the node unpacks it into a running instance or a volume
//   (model/file_copy.h).
//
// Packed with the system's GNU tar. A workdir is the directory's contents (not the directory
// itself), without version-control directories (--exclude-vcs), and without what
// DIR/.gpurentignore names (one tar --exclude pattern a line, e.g. `data/*.bin`, `__pycache__`). A
// copy's source is packed whole, under its own name (a file, or a directory with everything in
// it), or, written with a trailing slash (`data/`), as the directory's contents, as rsync does;
// with group read and write (a volume is shared through its tenant's group). At most
// model::kMaxWorkdirBytes compressed.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "cli/context.h"
#include "client/api_client.h"
#include "common/result.h"

namespace gpurent::cli {

inline constexpr std::string_view kWorkdirIgnoreFile = ".gpurentignore";

// The tar.gz bytes. Errors: not a directory (kInvalidArgument "invalid_workdir"), too large
// (kPayloadTooLarge "upload_too_large"), or tar failed (its message).
Result<std::string> pack_workdir(const std::filesystem::path& dir);

// A copy's source, packed. Errors: it does not exist (kInvalidArgument "invalid_source"), too
// large, or tar failed.
Result<std::string> pack_copy_source(std::string_view source);

// Uploads packed bytes (an unfinished upload of the same bytes goes on where it stopped), says so
// on stderr naming `what`; returns the upload's id.
Result<std::string> upload_packed(Context& ctx, client::ApiClient& api, std::string_view packed,
                                  std::string_view what);

// Packs and uploads the directory; returns the upload's id for the spec.
Result<std::string> upload_workdir(Context& ctx, client::ApiClient& api,
                                   const std::filesystem::path& dir);

}  // namespace gpurent::cli
