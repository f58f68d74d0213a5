#include "agent/sim_workloads.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "agent/bench/gpu_bench.h"

namespace gpurent::agent {
SimWorkloads::Duration SimWorkloads::env_duration(const model::WorkloadSpec& spec) {
  const auto it = spec.env.find(std::string(kSimDurationEnv));
  if (it == spec.env.end()) return std::optional<std::chrono::milliseconds>();
  const std::string& text = it->second;
  double seconds = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(seconds) ||
      seconds < 0 || seconds > kMaxSimDurationS) {
    return fail(Error::invalid("invalid_sim_duration",
                               fmt::format("{}='{}' is not a number of seconds from 0 to {}",
                                           kSimDurationEnv, text, kMaxSimDurationS)));
  }
  return std::optional(
      std::chrono::round<std::chrono::milliseconds>(std::chrono::duration<double>(seconds)));
}

BusyGpus SimWorkloads::busy_gpus() const {
  BusyGpus busy;
  for (const auto& [key, run] : runs_) {
    if (run.phase != model::WorkloadPhase::kRunning) continue;
    for (const auto& gpu : run.gpus) busy.emplace(gpu, key.instance_id);
  }
  return busy;
}

void SimWorkloads::end_run(Run& run, int code, std::string message) {
  run.phase = model::WorkloadPhase::kExited;
  run.ends_at.reset();
  run.exit_code = code;
  run.message = std::move(message);
}

bool SimWorkloads::converge(const model::DesiredState& desired, Time now) {
  bool changed = desired.generation != applied_generation_;
  if (!desired.benchmark || gpus_.empty()) {
    benchmark_.reset();
  } else if (!benchmark_ || benchmark_->request != desired.benchmark->id) {
    benchmark_ = model::BenchmarkOutcome{.request = desired.benchmark->id};
    if (const auto asked = requested_gpus(*desired.benchmark, gpus_)) {
      benchmark_->result = simulated_benchmark(*asked);
    } else {
      benchmark_->error = asked.error().message;
    }
    changed = true;
  }
  std::set<WorkloadKey> wanted;
  for (const auto& spec : desired.workloads) {
    if (wanted.size() == options_.max_runs) {
      if (changed) {
        spdlog::error("desired_state_truncated node={} generation={} workloads={} max={}",
                      desired.node_id, desired.generation, desired.workloads.size(),
                      options_.max_runs);
      }
      break;
    }
    WorkloadKey key{spec.instance_id, spec.run};
    wanted.insert(key);
    const auto tracked = runs_.find(key);
    if (tracked != runs_.end()) {
      if (!spec.should_run && tracked->second.phase != model::WorkloadPhase::kExited) {
        end_run(tracked->second, kSimStopExitCode);
        changed = true;
      }
      continue;
    }
    if (!spec.should_run) continue;  // stopped before it ever started here
    Run run;
    run.gpus = spec.gpus;
    if (auto duration = options_.duration_of(spec); !duration) {
      end_run(run, kStartFailedExitCode, duration.error().message);
    } else if (*duration) {
      run.ends_at = now + **duration;
    }
    runs_.emplace(std::move(key), std::move(run));
    changed = true;
  }
  for (auto it = runs_.begin(); it != runs_.end();) {
    Run& run = it->second;
    if (wanted.contains(it->first)) {
      ++it;
      continue;
    }
    if (run.phase != model::WorkloadPhase::kExited) {  // no longer wanted: it stops
      end_run(run, kSimStopExitCode);
      changed = true;
      ++it;
    } else if (run.exit_reported) {
      it = runs_.erase(it);
    } else {
      ++it;
    }
  }
  wanted_ = std::move(wanted);
  applied_generation_ = desired.generation;
  return changed;
}

bool SimWorkloads::advance(Time now) {
  bool ended = false;
  for (auto& [_, run] : runs_) {
    if (run.ends_at && *run.ends_at <= now) {
      end_run(run, 0);
      ended = true;
    }
  }
  return ended;
}

bool SimWorkloads::advance(Time now, const WorkloadKey& key) {
  const auto it = runs_.find(key);
  if (it == runs_.end() || !it->second.ends_at || *it->second.ends_at > now) return false;
  end_run(it->second, 0);
  return true;
}

bool SimWorkloads::end(const WorkloadKey& key, int exit_code) {
  const auto it = runs_.find(key);
  if (it == runs_.end() || it->second.phase != model::WorkloadPhase::kRunning) return false;
  end_run(it->second, exit_code);
  return true;
}

std::vector<WorkloadKey> SimWorkloads::running() const {
  std::vector<WorkloadKey> keys;
  for (const auto& [key, run] : runs_) {
    if (run.phase == model::WorkloadPhase::kRunning) keys.push_back(key);
  }
  return keys;
}

std::optional<SimWorkloads::Time> SimWorkloads::ends_at(const WorkloadKey& key) const {
  const auto it = runs_.find(key);
  if (it == runs_.end()) return std::nullopt;
  return it->second.ends_at;
}

std::optional<SimWorkloads::Time> SimWorkloads::next_exit() const {
  std::optional<Time> next;
  for (const auto& [_, run] : runs_) {
    if (run.ends_at && (!next || *run.ends_at < *next)) next = run.ends_at;
  }
  return next;
}

std::vector<WorkloadKey> SimWorkloads::unsent_logs() const {
  std::vector<WorkloadKey> keys;
  for (const auto& [key, run] : runs_) {
    if (!run.log_sent && (run.reported || run.phase == model::WorkloadPhase::kExited)) {
      keys.push_back(key);
    }
  }
  return keys;
}

void SimWorkloads::log_sent(const WorkloadKey& key) {
  if (const auto it = runs_.find(key); it != runs_.end()) it->second.log_sent = true;
}

model::NodeReport SimWorkloads::report() const {
  model::NodeReport report;
  report.applied_generation = applied_generation_;
  report.benchmark = benchmark_;
  for (const auto& [key, run] : runs_) {
    const bool exited = run.phase == model::WorkloadPhase::kExited && run.log_sent;
    report.workloads.push_back(
        {key.instance_id, key.run, exited ? run.phase : model::WorkloadPhase::kRunning,
         exited ? run.exit_code : std::nullopt, exited ? run.message : std::string()});
  }
  return report;
}

void SimWorkloads::reported(const model::NodeReport& sent) {
  for (const auto& status : sent.workloads) {
    const auto it = runs_.find({status.instance_id, status.run});
    if (it == runs_.end()) continue;
    it->second.reported = true;
    if (status.phase != model::WorkloadPhase::kExited) continue;
    if (wanted_.contains(it->first)) {
      it->second.exit_reported = true;
    } else {
      runs_.erase(it);
    }
  }
}

model::NodeReport converge_and_report(SimWorkloads& workloads, const model::DesiredState& desired,
                                      SimWorkloads::Time now) {
  workloads.converge(desired, now);
  for (const auto& key : workloads.unsent_logs()) workloads.log_sent(key);
  model::NodeReport report = workloads.report();
  workloads.reported(report);
  return report;
}

}  // namespace gpurent::agent
