#include "server/upload_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "api/workloads.h"
#include "common/random.h"
#include "model/file_copy.h"

namespace gpurent::server {
namespace {

constexpr std::string_view kMetaFile = "meta.json";
constexpr std::string_view kDataFile = "data";

Error io_error(std::string_view what, const std::filesystem::path& path) {
  return Error::internal(fmt::format("{} {}: {}", what, path.string(), std::strerror(errno)));
}

bool valid_sha256(std::string_view hex) {
  return hex.size() == 64 && std::all_of(hex.begin(), hex.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

Result<std::string> read_whole(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(io_error("open", path));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

Result<Upload> parse_meta(const std::string& id, const std::string& text) {
  GPURENT_TRY(json, parse_json_object(text));
  Upload upload;
  upload.id = id;
  GPURENT_TRY(tenant, required_string(json, "tenant_id", 256));
  GPURENT_TRY(size, required_int(json, "size", 1, kMaxUploadBytes));
  GPURENT_TRY(sha256, required_string(json, "sha256", 64));
  GPURENT_TRY(received, required_int(json, "received", 0, kMaxUploadBytes));
  GPURENT_TRY(created, required_int(json, "created_at_ms", 0, INT64_MAX));
  upload.tenant_id = std::move(tenant);
  upload.size = size;
  upload.sha256 = std::move(sha256);
  upload.received = received;
  upload.complete = json.value("complete", false);
  upload.created_at = Timestamp(Millis(created));
  return upload;
}

}  // namespace

Json upload_view(const Upload& upload) {
  return api::Upload{.id = upload.id,
                     .size = upload.size,
                     .sha256 = upload.sha256,
                     .received = upload.received,
                     .complete = upload.complete,
                     .created_at = upload.created_at};
}

Result<std::unique_ptr<UploadStore>> UploadStore::open(std::filesystem::path directory,
                                                       const Clock& clock) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) {
    return fail(
        Error::internal(fmt::format("cannot create {}: {}", directory.string(), ec.message())));
  }
  std::unique_ptr<UploadStore> opened(new UploadStore(std::move(directory), clock));
  UploadStore& store = *opened;
  for (const auto& item : std::filesystem::directory_iterator(store.directory_, ec)) {
    const std::string id = item.path().filename().string();
    auto text = read_whole(item.path() / kMetaFile);
    auto upload = text ? parse_meta(id, *text) : fail(std::move(text).error());
    if (!model::valid_upload_id(id) || !upload) {
      std::filesystem::remove_all(item.path(), ec);  // debris of a create cut short
      continue;
    }
    store.uploads_.emplace(id, std::move(*upload));
  }
  if (ec) return fail(Error::internal(fmt::format("cannot list uploads: {}", ec.message())));
  return opened;
}

Status UploadStore::save(const Upload& upload) const {
  const Json meta = {{"tenant_id", upload.tenant_id},
                     {"size", upload.size},
                     {"sha256", upload.sha256},
                     {"received", upload.received},
                     {"complete", upload.complete},
                     {"created_at_ms", upload.created_at.time_since_epoch().count()}};
  const auto dir = directory_ / upload.id;
  const auto temporary = dir / "meta.json.tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << meta.dump();
    if (!out.flush()) return fail(io_error("write", temporary));
  }
  std::error_code ec;
  std::filesystem::rename(temporary, dir / kMetaFile, ec);
  if (ec)
    return fail(Error::internal(fmt::format("rename {}: {}", temporary.string(), ec.message())));
  return {};
}

void UploadStore::drop_expired() {
  const Timestamp now = clock_->now();
  std::erase_if(uploads_, [&](const auto& item) {
    const Upload& upload = item.second;
    if (upload.complete || now - upload.created_at < kIncompleteUploadTtl) return false;
    std::error_code ec;
    std::filesystem::remove_all(directory_ / upload.id, ec);
    return true;
  });
}

Result<Upload> UploadStore::create(std::string_view tenant_id, int64_t size,
                                   std::string_view sha256) {
  if (size < 1) return fail(Error::invalid("invalid_field", "field 'size' must be at least 1"));
  if (size > kMaxUploadBytes) {
    return fail(Error{ErrorKind::kPayloadTooLarge, "upload_too_large",
                      fmt::format("an upload is at most {} MiB ({} bytes); send larger data in "
                                  "parts",
                                  kMaxUploadBytes >> 20, kMaxUploadBytes)});
  }
  if (!valid_sha256(sha256)) {
    return fail(Error::invalid("invalid_field",
                               "field 'sha256' must be 64 lowercase hex digits (sha256sum)"));
  }
  std::lock_guard lock(mutex_);
  drop_expired();
  // The same bytes declared again (a client that lost its upload's id): that upload, so the
  // client goes on from what it received, or sends nothing when it is complete.
  const auto same = std::find_if(uploads_.begin(), uploads_.end(), [&](const auto& item) {
    const Upload& upload = item.second;
    return upload.tenant_id == tenant_id && upload.size == size && upload.sha256 == sha256;
  });
  if (same != uploads_.end()) return same->second;
  const auto owned = std::count_if(uploads_.begin(), uploads_.end(), [&](const auto& item) {
    return item.second.tenant_id == tenant_id;
  });
  if (static_cast<size_t>(owned) >= kMaxUploadsPerTenant) {
    return fail(Error::conflict("too_many_uploads", fmt::format("a tenant keeps at most {} uploads",
                                                                kMaxUploadsPerTenant)));
  }
  Upload upload;
  upload.id = Rng(os_random_seed()).id("u-");
  upload.tenant_id = std::string(tenant_id);
  upload.size = size;
  upload.sha256 = std::string(sha256);
  upload.created_at = clock_->now();
  const auto dir = directory_ / upload.id;
  std::error_code ec;
  std::filesystem::create_directory(dir, ec);
  if (ec) return fail(Error::internal(fmt::format("mkdir {}: {}", dir.string(), ec.message())));
  if (std::ofstream data(dir / kDataFile, std::ios::trunc | std::ios::binary); !data) {
    return fail(Error::internal(fmt::format("cannot create {}", (dir / kDataFile).string())));
  }
  GPURENT_CHECK(save(upload));
  return uploads_.emplace(upload.id, upload).first->second;
}

Result<Upload> UploadStore::append(std::string_view tenant_id, std::string_view id, int64_t offset,
                                   std::string_view bytes) {
  std::lock_guard lock(mutex_);
  const auto it = uploads_.find(id);
  if (it == uploads_.end() || it->second.tenant_id != tenant_id) {
    return fail(Error::not_found("upload", id));
  }
  Upload& upload = it->second;
  if (upload.complete) return fail(Error::conflict("upload_complete", "the upload is complete"));
  if (offset != upload.received) {
    return fail(Error::conflict("upload_offset_mismatch",
                                fmt::format("the upload has {} bytes: send from offset {}",
                                            upload.received, upload.received)));
  }
  if (upload.received + static_cast<int64_t>(bytes.size()) > upload.size) {
    return fail(Error::invalid("upload_too_long",
                               fmt::format("the upload was declared {} bytes long", upload.size)));
  }
  const auto data = directory_ / upload.id / kDataFile;
  const int fd = ::open(data.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return fail(io_error("open", data));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done,
                               static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  // Durable before acknowledged: the client resumes from what we say we have.
  const bool written = done == bytes.size() && ::fdatasync(fd) == 0;
  ::close(fd);
  if (!written) return fail(io_error("write", data));
  upload.received += static_cast<int64_t>(bytes.size());
  if (upload.received == upload.size) {
    GPURENT_TRY(whole, read_whole(data));
    if (sha256_hex(whole) != upload.sha256) {
      upload.received = 0;
      std::filesystem::resize_file(data, 0);
      GPURENT_CHECK(save(upload));
      return fail(Error::unprocessable(
          "checksum_mismatch",
          "the bytes received do not have the declared SHA-256; they were discarded: send them "
          "again from offset 0"));
    }
    upload.complete = true;
  }
  GPURENT_CHECK(save(upload));
  return upload;
}

Result<Upload> UploadStore::get(std::string_view tenant_id, std::string_view id) const {
  std::lock_guard lock(mutex_);
  const auto it = uploads_.find(id);
  if (it == uploads_.end() || it->second.tenant_id != tenant_id) {
    return fail(Error::not_found("upload", id));
  }
  return it->second;
}

Result<Upload> UploadStore::get_complete(std::string_view tenant_id, std::string_view id) const {
  GPURENT_TRY(upload, get(tenant_id, id));
  if (!upload.complete) {
    return fail(Error::conflict(
        "upload_incomplete",
        fmt::format("upload {} has {} of its {} bytes: send the rest first (PUT "
                    "/v1/uploads/{}?offset={})",
                    upload.id, upload.received, upload.size, upload.id, upload.received)));
  }
  return upload;
}

Result<std::string> UploadStore::read(std::string_view id) const {
  std::filesystem::path data;
  {
    std::lock_guard lock(mutex_);
    const auto it = uploads_.find(id);
    if (it == uploads_.end() || !it->second.complete) return fail(Error::not_found("upload", id));
    data = directory_ / it->second.id / kDataFile;
  }
  return read_whole(data);  // a complete upload's data no longer changes
}

}  // namespace gpurent::server
