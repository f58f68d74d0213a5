#include "agent/reconciler.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agent/files.h"

namespace gpurent::agent {
namespace {

// A run's log may lie where its workload writes (a VM's console, in its confined QEMU's directory):
// a link or a FIFO put in its place is no log (open_untrusted_file).
int64_t log_size(const std::filesystem::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? static_cast<int64_t>(st.st_size)
                                                                : 0;
}

Result<std::string> read_range(const std::filesystem::path& path, int64_t offset, size_t length) {
  GPURENT_TRY(fd, open_untrusted_file(path));
  std::string bytes(length, '\0');
  size_t done = 0;
  while (done < length) {
    const ssize_t n = ::pread(fd, bytes.data() + done, length - done,
                              static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

}  // namespace

void Reconciler::converge(const model::DesiredState& desired) {
  std::map<WorkloadKey, const model::WorkloadSpec*> wanted;
  for (const auto& spec : desired.workloads) {
    if (wanted.size() == kMaxWorkloads) {
      // Once per generation, not once per tick.
      if (desired.generation == applied_generation_) break;
      spdlog::error("desired_state_truncated generation={} workloads={} max={}", desired.generation,
                    desired.workloads.size(), kMaxWorkloads);
      break;
    }
    wanted.emplace(WorkloadKey{spec.instance_id, spec.run}, &spec);
  }

  for (const auto& [key, spec] : wanted) {
    if (!spec->should_run) {
      runtime_.stop(key);  // no-op unless it runs
      continue;
    }
    if (runtime_.find(key) || failed_starts_.contains(key)) continue;
    if (auto started = start(*spec); !started) {
      spdlog::error("workload_start_failed instance={} run={} code={} error=\"{}\"",
                    key.instance_id, key.run, started.error().code, started.error().message);
      failed_starts_.emplace(key, started.error().message);
    }
  }

  for (const auto& workload : runtime_.workloads()) {
    const WorkloadKey& key = workload.key;
    if (wanted.contains(key)) continue;
    if (workload.phase != model::WorkloadPhase::kExited) {
      runtime_.stop(key);
    } else if (exit_reported_.contains(key)) {
      if (auto forgotten = runtime_.forget(key); !forgotten) {
        spdlog::error("workload_forget_failed instance={} run={} error=\"{}\"", key.instance_id,
                      key.run, forgotten.error().message);
        continue;
      }
      logs_.erase(key);
      exit_reported_.erase(key);
      runs_.release(key);
    }
  }
  std::erase_if(failed_starts_, [&](const auto& item) { return !wanted.contains(item.first); });
  if (desired.generation != applied_generation_) {
    spdlog::info("desired_state_applied generation={} workloads={}", desired.generation,
                 wanted.size());
  }
  applied_generation_ = desired.generation;
  if (benchmarker_) benchmarker_->want(desired.benchmark);
  benchmark_asked_ =
      desired.benchmark ? std::optional<int64_t>(desired.benchmark->id) : std::nullopt;
  publish(wanted);
}

Status Reconciler::start(const model::WorkloadSpec& spec) {
  if (!spec.workdir.empty()) {
    if (!fetch_workdir_) {
      return fail(Error::internal("this agent cannot fetch workdirs"));
    }
    if (auto fetched = fetch_workdir_(spec.workdir); !fetched) {
      return fail(Error{
          fetched.error().kind, fetched.error().code,
          fmt::format("cannot fetch the workdir {}: {}", spec.workdir, fetched.error().message)});
    }
  }
  if (spec.services.empty()) return runtime_.start(spec);
  const WorkloadKey key{spec.instance_id, spec.run};
  GPURENT_TRY(services, runs_.bind_services(key, spec.services));
  model::WorkloadSpec with_services = spec;
  for (auto& [name, value] : service_env(spec.instance_id, services)) {
    with_services.env.insert_or_assign(name, std::move(value));
  }
  auto started = runtime_.start(with_services);
  if (!started) runs_.release(key);
  return started;
}

void Reconciler::publish(const std::map<WorkloadKey, const model::WorkloadSpec*>& wanted) {
  std::vector<PublishedRun> runs;
  for (const auto& workload : runtime_.workloads()) {
    const auto it = wanted.find(workload.key);
    const bool wanted_running = it != wanted.end() && it->second->should_run;
    runs.push_back({workload.key,
                    wanted_running && workload.phase == model::WorkloadPhase::kRunning &&
                        !workload.stop_requested,
                    it != wanted.end() ? place_of(*it->second) : RunPlace::kProcess});
  }
  runs_.publish(runs);
}

Status Reconciler::upload_log(ServerLink& link, std::string_view credential,
                              const Workload& workload) {
  LogCursor& cursor = logs_[workload.key];
  if (cursor.abandoned) return {};
  const int64_t size = log_size(workload.log_path);
  size_t sent = 0;
  while (cursor.offset < size && sent < kMaxLogBytesPerRunPerSync) {
    const size_t length =
        static_cast<size_t>(std::min<int64_t>(size - cursor.offset, kLogChunkBytes));
    auto bytes = read_range(workload.log_path, cursor.offset, length);
    if (!bytes || bytes->empty()) {
      spdlog::warn("log_read_failed instance={} run={} offset={} error=\"{}\"",
                   workload.key.instance_id, workload.key.run, cursor.offset,
                   bytes ? "short read" : bytes.error().message);
      return {};  // try again next pass
    }
    auto server_size = link.upload_log(credential, workload.key.instance_id, workload.key.run,
                                       cursor.offset, *bytes);
    if (!server_size) {
      const Error& error = server_size.error();
      if (retryable(error)) return fail(error);
      cursor.abandoned = true;
      spdlog::warn("log_upload_refused instance={} run={} code={} error=\"{}\"",
                   workload.key.instance_id, workload.key.run, error.code, error.message);
      return {};
    }
    sent += bytes->size();
    cursor.offset = *server_size;
  }
  return {};
}

bool Reconciler::log_complete(const Workload& workload) const {
  const auto it = logs_.find(workload.key);
  const LogCursor cursor = it == logs_.end() ? LogCursor{} : it->second;
  return cursor.abandoned || cursor.offset >= log_size(workload.log_path);
}

model::NodeReport Reconciler::report() const {
  model::NodeReport report;
  report.applied_generation = applied_generation_;
  report.node_api_address = node_api_address_;
  report.node_api_secret = node_api_secret_;
  report.container_runtime = container_runtime_;
  report.container_toolkit = container_toolkit_;
  report.vm = vm_;
  if (benchmarker_ && benchmark_asked_) report.benchmark = benchmarker_->outcome(*benchmark_asked_);
  for (const auto& workload : runtime_.workloads()) {
    model::WorkloadStatus status{workload.key.instance_id, workload.key.run,
                                 workload.phase,           workload.exit_code,
                                 workload.message,         workload.never_started};
    if (workload.phase == model::WorkloadPhase::kExited && !log_complete(workload)) {
      status = {workload.key.instance_id, workload.key.run, model::WorkloadPhase::kRunning,
                std::nullopt, ""};
    }
    report.workloads.push_back(std::move(status));
  }
  for (const auto& [key, why] : failed_starts_) {
    report.workloads.push_back(
        {key.instance_id, key.run, model::WorkloadPhase::kExited, kStartFailedExitCode, why, true});
  }
  return report;
}

Status Reconciler::sync(ServerLink& link, std::string_view credential) {
  for (const auto& workload : runtime_.workloads()) {
    if (auto uploaded = upload_log(link, credential, workload); !uploaded) return uploaded;
  }
  model::NodeReport sent = report();
  TelemetryBacklog::Pending telemetry;
  if (telemetry_) {
    telemetry = telemetry_->next();
    sent.telemetry = std::move(telemetry.batch);
  }
  if (auto reported = link.report(credential, sent); !reported) return reported;
  if (telemetry_) telemetry_->taken(telemetry);
  for (const auto& status : sent.workloads) {
    WorkloadKey key{status.instance_id, status.run};
    // Failed starts are dropped with the desired state that named them; only tracked runs wait.
    if (status.phase == model::WorkloadPhase::kExited && runtime_.find(key)) {
      exit_reported_.insert(std::move(key));
    }
  }
  return {};
}

}  // namespace gpurent::agent
