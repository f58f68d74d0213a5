// A simulated agent for the controller's simulation tests: the workloads one node runs, converged
// to a desired state the way the real agent's reconciler does it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "model/agent_protocol.h"

namespace gpurent::controller {

// (instance, run) -> the exit code once it has exited.
using SimWorkloads = std::map<std::pair<std::string, int64_t>, std::optional<int>>;

// Starts what should run, stops what should not (exit 143), forgets what left the set, and
// returns the report the agent sends.
inline model::NodeReport converge_sim_agent(SimWorkloads& workloads,
                                            const model::DesiredState& desired) {
  std::set<std::pair<std::string, int64_t>> wanted;
  for (const auto& spec : desired.workloads) {
    const auto key = std::make_pair(spec.instance_id, spec.run);
    wanted.insert(key);
    auto it = workloads.find(key);
    if (it == workloads.end() && spec.should_run) workloads.emplace(key, std::nullopt);
    if (it != workloads.end() && !spec.should_run && !it->second) it->second = 143;
  }
  std::erase_if(workloads, [&](const auto& entry) { return !wanted.contains(entry.first); });
  model::NodeReport report{desired.generation, {}};
  for (const auto& [key, exit] : workloads) {
    report.workloads.push_back(
        {key.first, key.second,
         exit ? model::WorkloadPhase::kExited : model::WorkloadPhase::kRunning, exit, ""});
  }
  return report;
}

}  // namespace gpurent::controller
