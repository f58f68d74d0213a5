// A rented instance: a workload with GPUs that runs until the tenant stops or removes it.
//
// Life cycle (the controller enforces the edges):
//   pending -> starting -> running -> stopping -> stopped | failed
//   any state -> terminated (DELETE; through stopping when it runs)
//   stopped | failed -> pending (start again: a new run, maybe on another node)
// Each start opens a new run; reports from an older run are ignored, which fences stale agents.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/money.h"

namespace gpurent::model {

enum class InstanceState {
  kPending,
  kStarting,
  kRunning,
  kStopping,
  kStopped,
  kFailed,
  kTerminated
};
std::string_view to_string(InstanceState state);
bool parse_instance_state(std::string_view text, InstanceState* out);
// Holds GPUs on a node (from placement until the agent confirms the process is gone).
bool holds_gpus(InstanceState state);

enum class PricingModel { kOnDemand };
std::string_view to_string(PricingModel pricing);
bool parse_pricing_model(std::string_view text, PricingModel* out);

struct InstanceSpec {
  std::string name;
  std::string gpu_type;
  int gpu_count = 1;
  int cpu = 0;                       // cores; 0 = no explicit request
  int memory_gb = 0;                 // 0 = no explicit request
  std::vector<std::string> command;  // argv; a string command is run through /bin/sh -c
  std::map<std::string, std::string> env;
  PricingModel pricing = PricingModel::kOnDemand;
};

struct Instance {
  std::string id;
  std::string tenant_id;
  InstanceSpec spec;
  InstanceState state = InstanceState::kPending;
  std::string node_id;            // set while placed
  std::vector<std::string> gpus;  // GPU UUIDs while placed
  int64_t run = 0;                // number of the current run (0 before the first start)
  Timestamp created_at{};
  std::optional<Timestamp> started_at;  // start of the current run's running phase
  std::optional<Timestamp> ended_at;    // end of the last run
  std::optional<int> exit_code;
  std::string reason;                // why the instance is in its state, for people
  bool terminate_requested = false;  // DELETE while running: terminated once the process is gone
  // Generation of the node's desired set that first contained this run; a report that has
  // applied that generation and does not list the run means the agent lost it.
  int64_t placed_generation = 0;
  // Increases with every change of the instance; caches of its view are keyed by it.
  int64_t revision = 0;
};

}  // namespace gpurent::model
