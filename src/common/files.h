// Small-file I/O for what a process keeps in its data directory: the agent's identity and workload
// records, the server's key files (common/secret_box.h, server/session_signer.h).
//
// Every file is written whole to a temporary name, synced and renamed over the target, so a reader
// (another process after a restart, or the agent reading a shim's exit record) sees either the old
// content or the new one, never a torn write. Reads are bounded: these files are small by
// construction and anything larger is treated as corrupt. Thread-safe (no shared state); safe to
// call from the agent's shim before it forks the workload.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gpurent {

// Larger than any record the agent writes (a launch record holds at most a 1 MiB request body).
inline constexpr size_t kMaxRecordBytes = 4 << 20;

// Writes content to path atomically (temporary file + fsync + rename + fsync of the directory),
// with exactly the given permission bits.
Status write_file_atomic(const std::filesystem::path& path, std::string_view content,
                         mode_t mode = 0644);

// Reads a whole file of at most max_bytes. A missing file is kNotFound with code "file_not_found".
Result<std::string> read_file(const std::filesystem::path& path,
                              size_t max_bytes = kMaxRecordBytes);

}  // namespace gpurent
