#include "server/log_store.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace gpurent::server {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kTruncatedMarker =
    "\n[gpurent: log truncated: this run wrote more than 64 MiB]\n";

// The agent-side size of a capped log is kept in a sidecar file next to it.
std::string sidecar(const std::string& path) { return path + ".size"; }

}  // namespace

LogStore::LogStore(std::string directory) : directory_(std::move(directory)) {}

std::string LogStore::path_of(std::string_view instance_id, int64_t run) const {
  return fmt::format("{}/{}/{}.log", directory_, instance_id, run);
}

int64_t LogStore::size(std::string_view instance_id, int64_t run) const {
  const std::string path = path_of(instance_id, run);
  std::error_code ec;
  const auto bytes = fs::file_size(path, ec);
  if (ec) return 0;
  // Only a capped log has a sidecar, and a capped log holds at least kMaxRunLogBytes.
  if (static_cast<int64_t>(bytes) >= kMaxRunLogBytes) {
    if (std::ifstream in(sidecar(path)); in) {
      int64_t logical = 0;
      if (in >> logical) return logical;
    }
  }
  return static_cast<int64_t>(bytes);
}

Result<int64_t> LogStore::append(std::string_view instance_id, int64_t run, int64_t offset,
                                 std::string_view data) {
  const int64_t current = size(instance_id, run);
  if (offset > current) {
    return fail(Error::conflict(
        "log_offset_gap", fmt::format("log of {} run {} has {} bytes", instance_id, run, current)));
  }
  const int64_t skip = current - offset;
  if (skip >= static_cast<int64_t>(data.size())) return current;  // nothing new
  data.remove_prefix(static_cast<size_t>(skip));
  const std::string path = path_of(instance_id, run);
  const auto make_directory = [&]() -> Status {
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) {
      return fail(Error::internal(fmt::format("cannot create log directory: {}", ec.message())));
    }
    made_directories_.emplace(instance_id);
    return {};
  };
  const bool known = made_directories_.contains(std::string(instance_id));
  if (!known) GPURENT_CHECK(make_directory());
  const int64_t logical = current + static_cast<int64_t>(data.size());
  std::ofstream out(path, std::ios::binary | std::ios::app);
  if (!out && known) {  // removed behind this store's back: made again
    GPURENT_CHECK(make_directory());
    out.open(path, std::ios::binary | std::ios::app);
  }
  if (!out) return fail(Error::internal(fmt::format("cannot open {}", path)));
  if (current < kMaxRunLogBytes) {
    const auto room = static_cast<size_t>(kMaxRunLogBytes - current);
    out.write(data.data(), static_cast<std::streamsize>(std::min(room, data.size())));
    if (data.size() > room) out.write(kTruncatedMarker.data(), kTruncatedMarker.size());
  }
  if (!out.flush()) return fail(Error::internal(fmt::format("cannot write {}", path)));
  if (logical > kMaxRunLogBytes) {
    std::ofstream(sidecar(path), std::ios::trunc) << logical;
  }
  return logical;
}

Result<std::string> LogStore::read(std::string_view instance_id, int64_t run, int64_t offset,
                                   size_t max_bytes) const {
  std::ifstream in(path_of(instance_id, run), std::ios::binary);
  if (!in) return std::string();
  in.seekg(offset);
  std::string out(max_bytes, '\0');
  in.read(out.data(), static_cast<std::streamsize>(max_bytes));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

}  // namespace gpurent::server
