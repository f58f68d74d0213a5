#include "agent/runtime/volumes.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>

#include "agent/files.h"
#include "common/json.h"

namespace gpurent::agent {
namespace {

constexpr std::string_view kVolumesDir = "volumes";
constexpr std::string_view kRecordFile = "volumes.json";

}  // namespace

std::filesystem::path volume_dir(const std::filesystem::path& data_dir,
                                 std::string_view volume_id) {
  return std::filesystem::absolute(data_dir / kVolumesDir / volume_id);
}

Result<std::vector<PreparedVolume>> prepare_volumes(const std::filesystem::path& data_dir,
                                                    const model::WorkloadSpec& spec) {
  std::vector<PreparedVolume> prepared;
  for (const auto& mount : spec.volumes) {
    // validate_workload has checked the id: it is a plain directory name.
    auto dir = volume_dir(data_dir, mount.volume_id);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return fail(Error::internal(fmt::format("cannot create the directory of volume {}: {}",
                                              mount.volume_id, ec.message())));
    }
    prepared.push_back({mount, std::move(dir)});
  }
  return prepared;
}

std::string volumes_env(const std::vector<PreparedVolume>& volumes,
                        const std::function<std::string(const PreparedVolume&)>& path) {
  std::string out;
  for (const auto& volume : volumes) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}={}", volume.mount.volume_id, path(volume));
  }
  return out;
}

VolumeJanitor::VolumeJanitor(std::filesystem::path data_dir) : data_dir_(std::move(data_dir)) {}

Result<std::optional<VolumeJanitor::Record>> VolumeJanitor::load() const {
  auto text = read_file(data_dir_ / kRecordFile);
  if (!text) {
    if (text.error().code == "file_not_found") return std::optional<Record>();
    return fail(text.error());
  }
  try {  // nlohmann reports a corrupt record by throwing
    const Json j = Json::parse(*text);
    Record record;
    record.node_id = j.at("node_id").get<std::string>();
    record.generation = j.at("generation").get<int64_t>();
    record.volumes = j.at("volumes").get<std::set<std::string>>();
    return std::optional<Record>(std::move(record));
  } catch (const std::exception& e) {
    return fail(Error::internal(
        fmt::format("corrupt record {}: {}", (data_dir_ / kRecordFile).string(), e.what())));
  }
}

Status VolumeJanitor::converge(const model::DesiredState& desired) {
  if (!loaded_) {
    // A corrupt record fails every pass (and deletes nothing) until someone looks at it.
    GPURENT_TRY(record, load());
    record_ = std::move(record);
    loaded_ = true;
  }
  const bool same_node = record_ && record_->node_id == desired.node_id;
  if (same_node && desired.generation <= record_->generation) return {};
  Record next{desired.node_id, desired.generation,
              std::set<std::string>(desired.volumes.begin(), desired.volumes.end())};
  if (same_node) {
    for (const auto& id : record_->volumes) {
      if (next.volumes.contains(id) || !model::valid_volume_id(id)) continue;
      std::error_code ec;
      const auto removed = std::filesystem::remove_all(volume_dir(data_dir_, id), ec);
      if (ec) {
        spdlog::error("volume_delete_failed volume={} error=\"{}\"", id, ec.message());
        next.volumes.insert(id);  // listed again: the next desired state retries
        continue;
      }
      spdlog::info("volume_deleted volume={} generation={} files={}", id, desired.generation,
                   removed);
    }
  }
  const Json j = {
      {"node_id", next.node_id}, {"generation", next.generation}, {"volumes", next.volumes}};
  GPURENT_CHECK(write_file_atomic(data_dir_ / kRecordFile, j.dump()));
  record_ = std::move(next);
  return {};
}

Status share_volume_with_group(const std::filesystem::path& dir, gid_t gid) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || st.st_gid != gid) {
    GPURENT_CHECK(chown_tree(dir, 0, gid));
    // Files from before the sandbox: the group reads and writes them, as the owner could.
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_symlink(ec)) {
        std::filesystem::permissions(
            it->path(),
            std::filesystem::perms::group_read | std::filesystem::perms::group_write |
                (it->is_directory(ec) ? std::filesystem::perms::group_exec
                                      : std::filesystem::perms::none),
            std::filesystem::perm_options::add | std::filesystem::perm_options::nofollow, ec);
      }
    }
  }
  if (::chmod(dir.c_str(), 02770) != 0) {
    return fail(Error::internal(fmt::format("chmod {}: {}", dir.string(), std::strerror(errno))));
  }
  return {};
}

}  // namespace gpurent::agent
