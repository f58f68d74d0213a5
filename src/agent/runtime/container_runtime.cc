#include "agent/runtime/container_runtime.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <fstream>

#include "agent/runtime/volumes.h"
#include "agent/runtime/workdir.h"
#include "agent/runtime/workload_files.h"

namespace gpurent::agent {
namespace {

constexpr std::string_view kManagedLabel = "gpurent.managed";
constexpr std::string_view kInstanceLabel = "gpurent.instance";
constexpr std::string_view kRunLabel = "gpurent.run";
constexpr std::string_view kOwnerLabel = "gpurent.owner";
constexpr std::string_view kWorkspace = "/workspace";
// How often a running container's state and new log lines are fetched (two calls each).
constexpr auto kRefreshInterval = std::chrono::milliseconds(500);
constexpr int64_t kPidsLimit = 32768;
constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kDefaultShmBytes = kGiB;
constexpr int64_t kMaxShmBytes = 16 * kGiB;
constexpr int64_t kMaxOpenFiles = 1 << 20;
// Root bypasses RLIMIT_NPROC, but the engine must be able to set it at all: the host's own
// value is refused on some machines (this project's CI among them).
constexpr int64_t kMaxProcesses = 32768;

// Open files: as many as the agent itself may have, up to a million.
int64_t open_files_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_max == RLIM_INFINITY) {
    return kMaxOpenFiles;
  }
  return std::min<int64_t>(static_cast<int64_t>(limit.rlim_max), kMaxOpenFiles);
}

std::optional<int64_t> to_int(std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A log line's time, "2026-11-30T22:31:59Z" (a fraction may follow the seconds), as seconds
// since the epoch; nullopt for anything else.
std::optional<int64_t> parse_log_second(std::string_view text) {
  if (text.size() < 20 || text.back() != 'Z' || text[4] != '-' || text[10] != 'T') {
    return std::nullopt;
  }
  const auto year = to_int(text.substr(0, 4)), month = to_int(text.substr(5, 2)),
             day = to_int(text.substr(8, 2)), hour = to_int(text.substr(11, 2)),
             minute = to_int(text.substr(14, 2)), second = to_int(text.substr(17, 2));
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year(static_cast<int>(*year)),
                                         std::chrono::month(static_cast<unsigned>(*month)),
                                         std::chrono::day(static_cast<unsigned>(*day))};
  if (!date.ok()) return std::nullopt;
  const int64_t days = std::chrono::sys_days(date).time_since_epoch().count();
  return days * 86400 + *hour * 3600 + *minute * 60 + *second;
}

}  // namespace

std::string container_name(const WorkloadKey& key) {
  return fmt::format("gpurent-{}-{}", key.instance_id, key.run);
}

ContainerRuntime::ContainerRuntime(ContainerRuntimeOptions options, DockerClient client)
    : options_(std::move(options)),
      client_(std::move(client)),
      owner_(std::filesystem::absolute(options_.data_dir).lexically_normal().string()) {}

Result<std::unique_ptr<ContainerRuntime>> ContainerRuntime::open(ContainerRuntimeOptions options) {
  // Every bind mount lies under it: refused here, no container could start.
  GPURENT_CHECK(check_bind_source(options.data_dir, options.socket_path));
  GPURENT_TRY(client, DockerClient::open(options.socket_path));
  GPURENT_TRY(version, client.version());
  spdlog::info("container_engine socket={} version={}", options.socket_path, version);
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir / "containers", ec);
  if (!ec) std::filesystem::create_directories(options.data_dir / "instances", ec);
  if (ec) {
    return fail(Error::internal(fmt::format("cannot create the directories under {}: {}",
                                            options.data_dir.string(), ec.message())));
  }
  auto runtime = std::unique_ptr<ContainerRuntime>(
      new ContainerRuntime(std::move(options), std::move(client)));
  GPURENT_CHECK(runtime->adopt_all());
  return runtime;
}

std::filesystem::path ContainerRuntime::workload_dir(const WorkloadKey& key) const {
  return options_.data_dir / "containers" / fmt::format("{}.{}", key.instance_id, key.run);
}

std::filesystem::path ContainerRuntime::instance_dir(std::string_view instance_id) const {
  return options_.data_dir / "instances" / std::string(instance_id);
}

Status ContainerRuntime::adopt_all() {
  GPURENT_TRY(found, client_.list(fmt::format("{}={}", kOwnerLabel, owner_)));
  for (const ContainerInfo& container : found) {
    const auto instance = container.labels.find(std::string(kInstanceLabel));
    const auto run = container.labels.find(std::string(kRunLabel));
    const auto run_number = run == container.labels.end() ? std::nullopt : to_int(run->second);
    if (instance == container.labels.end() || !run_number || !valid_instance_id(instance->second)) {
      spdlog::warn("container_unrecognised id={} name={}", container.id, container.name);
      continue;
    }
    const WorkloadKey key{instance->second, *run_number};
    Entry entry;
    entry.info.key = key;
    entry.info.phase = model::WorkloadPhase::kRunning;
    entry.container = container.id;
    const auto dir = workload_dir(key);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    entry.info.log_path = dir / kLogFile;
    const auto size = std::filesystem::file_size(entry.info.log_path, ec);
    entry.skip_bytes = ec ? 0 : static_cast<int64_t>(size);
    auto& adopted = entries_.insert_or_assign(key, std::move(entry)).first->second;
    refresh(adopted);
    spdlog::info("workload_adopted instance={} run={} container={} phase={}", key.instance_id,
                 key.run, container.name, model::to_string(adopted.info.phase));
  }
  return {};
}

Status ContainerRuntime::start(const model::WorkloadSpec& spec) {
  GPURENT_CHECK(validate_workload(spec));
  if (spec.image.empty()) {
    return fail(Error::invalid("invalid_workload", "the container runtime needs an image"));
  }
  if (!spec.gpus.empty() && !options_.gpu_refusal.empty()) {
    return fail(Error::unprocessable("container_gpus_refused", options_.gpu_refusal));
  }
  const WorkloadKey key{spec.instance_id, spec.run};
  GPURENT_CHECK(admit_workload(key, entries_.contains(key), entries_.size()));
  const auto dir = workload_dir(key);
  const auto home = instance_dir(spec.instance_id);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // debris of a start that failed half-way
  std::filesystem::create_directories(dir, ec);
  if (!ec) std::filesystem::create_directories(home, ec);
  if (!ec) std::ofstream(dir / kLogFile, std::ios::trunc);
  if (ec) {
    return fail(Error::internal(fmt::format("cannot create the directories of {}.{}: {}",
                                            key.instance_id, key.run, ec.message())));
  }

  if (!spec.workdir.empty()) {
    GPURENT_CHECK(unpack_workdir(options_.data_dir, spec.instance_id, spec.workdir, home, {}));
  }
  GPURENT_TRY(volumes, prepare_volumes(options_.data_dir, spec));
  GPURENT_TRY(present, client_.image_exists(spec.image));
  if (!present) GPURENT_CHECK(client_.pull(spec.image));

  const int64_t memory = int64_t{spec.memory_gb} * kGiB;
  ContainerSpec container{
      .name = container_name(key),
      .image = spec.image,
      .command = spec.command,
      .env = platform_env(spec),
      .labels = {{std::string(kManagedLabel), "true"},
                 {std::string(kOwnerLabel), owner_},
                 {std::string(kInstanceLabel), spec.instance_id},
                 {std::string(kRunLabel), std::to_string(spec.run)}},
      .working_dir = std::string(kWorkspace),
      .mounts = {{std::filesystem::absolute(home).string(), std::string(kWorkspace), false}},
      .gpu_uuids = spec.gpus,
      .gpu_access = options_.gpu_access,
      .nano_cpus = int64_t{spec.cpu} * 1'000'000'000,
      .memory_bytes = memory,
      .pids_limit = kPidsLimit,
      .shm_bytes = memory > 0 ? std::min(memory / 2, kMaxShmBytes) : kDefaultShmBytes,
      .ulimits = {{"nofile", open_files_limit(), open_files_limit()},
                  {"nproc", kMaxProcesses, kMaxProcesses}},
      .network_mode = options_.network_mode};
  // Each volume's data is bind-mounted at its mount path, which the workload sees as it is.
  for (const auto& volume : volumes) {
    container.mounts.push_back({volume.dir.string(), volume.mount.mount_path, false});
  }
  if (!volumes.empty()) {
    container.env["GPURENT_VOLUMES"] =
        volumes_env(volumes, [](const PreparedVolume& volume) { return volume.mount.mount_path; });
  }
  // A container of that name without an entry is debris of a start that failed half-way.
  if (auto removed = client_.remove(container.name, true);
      !removed && removed.error().kind != ErrorKind::kNotFound) {
    return removed;
  }
  GPURENT_TRY(id, client_.create(container));
  if (auto started = client_.start(id); !started) {
    static_cast<void>(client_.remove(id, true));  // best effort: the start's error is the news
    return started;
  }
  Entry entry;
  entry.info.key = key;
  entry.info.phase = model::WorkloadPhase::kRunning;
  entry.info.log_path = dir / kLogFile;
  entry.container = id;
  auto& started = entries_.emplace(key, std::move(entry)).first->second;
  refresh(started);
  spdlog::info("workload_started instance={} run={} container={} image={} gpus={}", key.instance_id,
               key.run, container.name, spec.image, spec.gpus.size());
  return {};
}

void ContainerRuntime::stop(const WorkloadKey& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return;
  Entry& entry = it->second;
  if (entry.info.phase == model::WorkloadPhase::kExited || entry.info.stop_requested) return;
  entry.info.stop_requested = true;
  entry.kill_at = std::chrono::steady_clock::now() + options_.stop_grace;
  if (auto sent = client_.kill(entry.container, "SIGTERM"); !sent) {
    spdlog::warn("workload_sigterm_failed instance={} run={} error=\"{}\"", key.instance_id,
                 key.run, sent.error().message);
  }
}

Status ContainerRuntime::forget(const WorkloadKey& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return {};
  if (it->second.info.phase != model::WorkloadPhase::kExited) {
    return fail(Error::conflict(
        "workload_running", fmt::format("workload {}.{} still runs", key.instance_id, key.run)));
  }
  if (auto removed = client_.remove(it->second.container, true);
      !removed && removed.error().kind != ErrorKind::kNotFound) {
    return removed;
  }
  std::error_code ec;
  std::filesystem::remove_all(workload_dir(key), ec);
  entries_.erase(it);
  return {};
}

void ContainerRuntime::poll() {
  const auto now = std::chrono::steady_clock::now();
  for (auto& [key, entry] : entries_) {
    if (entry.info.phase == model::WorkloadPhase::kExited) continue;
    if (entry.kill_at && now >= *entry.kill_at && !entry.killed) {
      entry.killed = true;
      if (auto sent = client_.kill(entry.container, "SIGKILL"); !sent) {
        spdlog::warn("workload_sigkill_failed instance={} run={} error=\"{}\"", key.instance_id,
                     key.run, sent.error().message);
      }
      entry.next_refresh = now;
    }
    if (now >= entry.next_refresh) refresh(entry);
  }
}

void ContainerRuntime::refresh(Entry& entry) {
  entry.next_refresh = std::chrono::steady_clock::now() + kRefreshInterval;
  auto info = client_.inspect(entry.container);
  if (!info) {
    if (info.error().kind != ErrorKind::kNotFound) return;  // the engine is away: try again
    entry.info.phase = model::WorkloadPhase::kExited;
    entry.info.exit_code = kKilledExitCode;
    entry.info.message = "the container was removed from outside the agent";
    return;
  }
  copy_logs(entry);
  if (info->state != "exited" && info->state != "stopped") return;
  // The last lines may have been written between the two calls.
  copy_logs(entry);
  entry.info.phase = model::WorkloadPhase::kExited;
  entry.info.exit_code = info->exit_code;
  spdlog::info("workload_exited instance={} run={} exit_code={}", entry.info.key.instance_id,
               entry.info.key.run, info->exit_code);
}

void ContainerRuntime::copy_logs(Entry& entry) {
  auto text = client_.logs(entry.container, {.since = entry.last_second, .timestamps = true});
  if (!text) return;
  std::string fresh;
  int64_t seen_in_last_second = 0;
  size_t start = 0;
  while (start < text->size()) {
    size_t end = text->find('\n', start);
    end = end == std::string::npos ? text->size() : end + 1;
    const std::string_view line(text->data() + start, end - start);
    start = end;
    const size_t space = line.find(' ');
    const auto second =
        space == std::string_view::npos ? std::nullopt : parse_log_second(line.substr(0, space));
    if (!second || *second < entry.last_second) continue;
    if (*second > entry.last_second) {
      entry.last_second = *second;
      entry.copied_in_last_second = 0;
      seen_in_last_second = 0;
    }
    // Lines of the second the last copy ended in come again: skip the ones copied then.
    if (++seen_in_last_second <= entry.copied_in_last_second) continue;
    ++entry.copied_in_last_second;
    const std::string_view payload = line.substr(space + 1);
    // Adopted: the log file already holds the first lines.
    if (entry.skip_bytes >= static_cast<int64_t>(payload.size())) {
      entry.skip_bytes -= static_cast<int64_t>(payload.size());
      continue;
    }
    entry.skip_bytes = 0;
    fresh.append(payload);
  }
  if (fresh.empty()) return;
  std::ofstream(entry.info.log_path, std::ios::app | std::ios::binary) << fresh;
}

std::vector<Workload> ContainerRuntime::workloads() const { return workloads_of(entries_); }

const Workload* ContainerRuntime::find(const WorkloadKey& key) const {
  return find_workload(entries_, key);
}

std::optional<Runtime::SteadyTime> ContainerRuntime::next_deadline() const {
  std::optional<SteadyTime> next;
  for (const auto& [key, entry] : entries_) {
    if (entry.info.phase == model::WorkloadPhase::kExited) continue;
    const SteadyTime due = entry.kill_at && !entry.killed
                               ? std::min(*entry.kill_at, entry.next_refresh)
                               : entry.next_refresh;
    if (!next || due < *next) next = due;
  }
  return next;
}

}  // namespace gpurent::agent
