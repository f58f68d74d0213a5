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

uint32_t guest_id_blocks(IdRange range) {
  const uint64_t first = uint64_t{range.last} + 1;
  const uint64_t end = uint64_t{kHighestId} + 1;
  return first < end ? static_cast<uint32_t>((end - first) / kGuestIdCount) : 0;
}

WorkloadUsers::WorkloadUsers(std::filesystem::path log, IdRange range)
    : log_(std::move(log)),
      uids_{.kind = "instance", .first = range.first, .last = range.last},
      gids_{.kind = "tenant", .first = range.first, .last = range.last},
      // The last block's first id: the block ends below 2^31.
      guest_ids_{.kind = "guests",
                 .first = range.last + 1,
                 .last = kHighestId - kGuestIdCount + 1,
                 .step = kGuestIdCount} {
  const auto range_used_up = fmt::format(
      "every id of the range {}-{} is given; widen --workload-ids", range.first, range.last);
  uids_.exhausted = gids_.exhausted = range_used_up;
  guest_ids_.exhausted = fmt::format(
      "every block of guest ids below 2^31 is given (65536 ids for each tenant's VMs, after "
      "--workload-ids {}-{}): no other tenant's VMs may share folders over virtio-fs on this "
      "node; give its agent --vm-shares 9p",
      range.first, range.last);
  for (Pool* pool : {&uids_, &gids_, &guest_ids_}) pool->next = pool->first;
}

Result<WorkloadUsers> WorkloadUsers::open(const std::filesystem::path& data_dir, IdRange range) {
  WorkloadUsers users(data_dir / kWorkloadUsersFile, range);
  auto text = read_file(users.log_, kMaxLogBytes);
  if (!text && text.error().code != "file_not_found") return fail(std::move(text).error());
  std::string complete = text ? *text : std::string();
  // A line torn by a crash was never synced, so its id was never used: it is skipped.
  complete.resize(complete.rfind('\n') == std::string::npos ? 0 : complete.rfind('\n') + 1);
  std::istringstream lines(complete);
  std::string kind, id, number;
  while (lines >> kind >> id >> number) {
    const auto value = parse_id(number);
    Pool* pool = nullptr;
    for (Pool* candidate : {&users.uids_, &users.gids_, &users.guest_ids_}) {
      if (candidate->kind == kind) pool = candidate;
    }
    if (!value || pool == nullptr) {
      return fail(Error::internal(
          fmt::format("{} is corrupt near '{} {} {}'", users.log_.string(), kind, id, number)));
    }
    pool->given[id] = *value;
    pool->next = static_cast<uint32_t>(
        std::clamp<uint64_t>(uint64_t{*value} + pool->step, pool->next, UINT32_MAX));
  }
  // Ids given under an earlier --workload-ids stay their owners' alone: new guest blocks start
  // past every workload id given, and new workload ids stop before the first guest block given.
  users.guest_ids_.next = std::max({users.guest_ids_.next, users.uids_.next, users.gids_.next});
  for (const auto& [tenant, first] : users.guest_ids_.given) {
    for (Pool* pool : {&users.uids_, &users.gids_}) pool->last = std::min(pool->last, first - 1);
  }
  return users;
}

Result<uint32_t> WorkloadUsers::uid_of_instance(std::string_view instance_id) {
  std::lock_guard lock(*mutex_);
  return assign(uids_, instance_id);
}

Result<uint32_t> WorkloadUsers::gid_of_tenant(std::string_view tenant_id) {
  std::lock_guard lock(*mutex_);
  return assign(gids_, tenant_id);
}

Result<uint32_t> WorkloadUsers::guest_ids_of_tenant(std::string_view tenant_id) {
  std::lock_guard lock(*mutex_);
  return assign(guest_ids_, tenant_id);
}

std::optional<uint32_t> WorkloadUsers::given_guest_ids(std::string_view tenant_id) const {
  std::lock_guard lock(*mutex_);
  const auto it = guest_ids_.given.find(tenant_id);
  return it == guest_ids_.given.end() ? std::nullopt : std::optional<uint32_t>(it->second);
}

Result<uint32_t> WorkloadUsers::assign(Pool& pool, std::string_view id) {
  if (const auto it = pool.given.find(id); it != pool.given.end()) return it->second;
  if (id.empty() || id.find_first_of(" \n\t") != std::string_view::npos) {
    return fail(
        Error::invalid("invalid_workload", fmt::format("no {} id to give a user to", pool.kind)));
  }
  if (pool.next > pool.last || pool.next < pool.first) {
    return fail(Error{ErrorKind::kUnavailable, "workload_ids_exhausted", pool.exhausted});
  }
  const std::string line = fmt::format("{} {} {}\n", pool.kind, id, pool.next);
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
  const uint32_t given = pool.next;
  pool.given.emplace(std::string(id), given);
  pool.next += pool.step;
  return given;
}

}  // namespace gpurent::agent
