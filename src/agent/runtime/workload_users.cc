#include "agent/runtime/workload_users.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <sstream>

#include "agent/files.h"

namespace gpurent::agent {
namespace {

constexpr uint32_t kLowestId = 1000;
constexpr uint32_t kHighestId = 0x7fffffff;
constexpr size_t kMaxLogBytes = 256 << 20;

std::optional<uint32_t> parse_id(std::string_view text) {
  uint32_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

Result<IdRange> parse_id_range(std::string_view text) {
  const size_t dash = text.find('-');
  const auto first = parse_id(text.substr(0, dash));
  const auto last = parse_id(dash == std::string_view::npos ? "" : text.substr(dash + 1));
  if (first && last && *first <= *last && *first >= kLowestId && *last <= kHighestId) {
    return IdRange{*first, *last};
  }
  return fail(Error::invalid(
      "invalid_id_range", fmt::format("'{}' is not FIRST-LAST with {} <= FIRST <= LAST <= {}", text,
                                      kLowestId, kHighestId)));
}

Result<WorkloadUsers> WorkloadUsers::open(const std::filesystem::path& data_dir, IdRange range) {
  WorkloadUsers users(data_dir / kWorkloadUsersFile, range);
  users.next_uid_ = users.next_gid_ = range.first;
  auto text = read_file(users.log_, kMaxLogBytes);
  if (!text && text.error().code != "file_not_found") return fail(std::move(text).error());
  std::string complete = text ? *text : std::string();
  // A line torn by a crash was never synced, so its id was never used: it is skipped.
  complete.resize(complete.rfind('\n') == std::string::npos ? 0 : complete.rfind('\n') + 1);
  std::istringstream lines(complete);
  std::string kind, id, number;
  while (lines >> kind >> id >> number) {
    const auto value = parse_id(number);
    if (!value || (kind != "instance" && kind != "tenant")) {
      return fail(Error::internal(
          fmt::format("{} is corrupt near '{} {} {}'", users.log_.string(), kind, id, number)));
    }
    auto& next = kind == "instance" ? users.next_uid_ : users.next_gid_;
    (kind == "instance" ? users.uids_ : users.gids_)[id] = *value;
    next = std::max(next, *value + 1);
  }
  return users;
}

Result<uint32_t> WorkloadUsers::uid_of_instance(std::string_view instance_id) {
  std::lock_guard lock(*mutex_);
  return assign("instance", instance_id, uids_, next_uid_);
}

Result<uint32_t> WorkloadUsers::gid_of_tenant(std::string_view tenant_id) {
  std::lock_guard lock(*mutex_);
  return assign("tenant", tenant_id, gids_, next_gid_);
}

Result<uint32_t> WorkloadUsers::assign(std::string_view kind, std::string_view id,
                                       std::map<std::string, uint32_t, std::less<>>& ids,
                                       uint32_t& next) {
  if (const auto it = ids.find(id); it != ids.end()) return it->second;
  if (id.empty() || id.find_first_of(" \n\t") != std::string_view::npos) {
    return fail(
        Error::invalid("invalid_workload", fmt::format("no {} id to give a user to", kind)));
  }
  if (next > range_.last || next < range_.first) {
    return fail(Error{ErrorKind::kUnavailable, "workload_ids_exhausted",
                      fmt::format("every id of the range {}-{} is given; widen --workload-ids",
                                  range_.first, range_.last)});
  }
  const std::string line = fmt::format("{} {} {}\n", kind, id, next);
  const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  const bool written = fd >= 0 &&
                       ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                       ::fsync(fd) == 0;
  const int error = errno;
  if (fd >= 0) ::close(fd);
  if (!written) {
    return fail(Error::internal(
        fmt::format("cannot record a workload id in {}: {}", log_.string(), std::strerror(error))));
  }
  ids.emplace(std::string(id), next);
  return next++;
}

}  // namespace gpurent::agent
