// Tenants' uploads: archives of code and data the agents unpack into an instance's home before
// its command starts (InstanceSpec::workdir; `gpurent launch --workdir DIR`), or into a running
// instance or a volume (`gpurent cp`, model/file_copy.h).
//
// An upload is declared first with its size and SHA-256 (POST /v1/uploads), then sent in pieces
// at increasing offsets (PUT /v1/uploads/{id}?offset=N, each within the API's body limit), so a
// broken transfer resumes where the server's `received` says. The piece that completes it is
// checked against the SHA-256; a mismatch discards the bytes (the client sends again). Only a
// complete upload can be named by an instance, and only its tenant's.
//
// Layout: <dir>/<id>/meta.json (tenant, size, sha256, received, complete; written atomically after
// each piece) and <dir>/<id>/data. Bounds: an upload is at most kMaxUploadBytes, a tenant has at
// most kMaxUploadsPerTenant; an upload not completed within kIncompleteUploadTtl is deleted at the
// next create().
// Threads: thread-safe (one mutex); the server writes on its log thread and checks a spec's
// workdir on the API thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/json.h"
#include "common/result.h"
#include "model/agent_protocol.h"

namespace gpurent::server {

inline constexpr int64_t kMaxUploadBytes = model::kMaxWorkdirBytes;
inline constexpr size_t kMaxUploadsPerTenant = 64;
inline constexpr std::chrono::hours kIncompleteUploadTtl{24};

struct Upload {
  std::string id;
  std::string tenant_id;
  int64_t size = 0;
  std::string sha256;  // lowercase hex
  int64_t received = 0;
  bool complete = false;
  Timestamp created_at{};
};

Json upload_view(const Upload& upload);

class UploadStore {
 public:
  // Loads the uploads under `directory` (made if missing).
  static Result<std::unique_ptr<UploadStore>> open(std::filesystem::path directory,
                                                   const Clock& clock);

  // Declares an upload; the tenant's upload of the same size and SHA-256, when it has one, is
  // returned instead (so a client that starts again resumes it, or finds it complete). Errors: a
  // size below 1 or a malformed SHA-256 (kInvalidArgument), above kMaxUploadBytes
  // (kPayloadTooLarge "upload_too_large"), too many uploads (kConflict "too_many_uploads").
  Result<Upload> create(std::string_view tenant_id, int64_t size, std::string_view sha256);
  // Appends bytes at `offset`, which must be what was received so far (kConflict
  // "upload_offset_mismatch", saying where to resume); past the declared size is refused. The
  // last piece checks the SHA-256 (kUnprocessable "checksum_mismatch": everything is discarded).
  Result<Upload> append(std::string_view tenant_id, std::string_view id, int64_t offset,
                        std::string_view bytes);
  // An upload of the tenant's (kNotFound for another tenant's, as for none).
  Result<Upload> get(std::string_view tenant_id, std::string_view id) const;
  // A complete upload of the tenant's: also kConflict "upload_incomplete", saying where to resume.
  Result<Upload> get_complete(std::string_view tenant_id, std::string_view id) const;
  // A complete upload's bytes, for an agent (the caller checks that the node may read it).
  Result<std::string> read(std::string_view id) const;

 private:
  UploadStore(std::filesystem::path directory, const Clock& clock)
      : directory_(std::move(directory)), clock_(&clock) {}
  Status save(const Upload& upload) const;
  void drop_expired();

  mutable std::mutex mutex_;
  std::filesystem::path directory_;
  const Clock* clock_;
  std::map<std::string, Upload, std::less<>> uploads_;
};

}  // namespace gpurent::server
