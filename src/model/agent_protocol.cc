#include "model/agent_protocol.h"

namespace gpurent::model {

std::string_view to_string(WorkloadPhase phase) {
  switch (phase) {
    case WorkloadPhase::kStarting:
      return "starting";
    case WorkloadPhase::kRunning:
      return "running";
    case WorkloadPhase::kExited:
      return "exited";
  }
  return "unknown";
}

bool parse_workload_phase(std::string_view text, WorkloadPhase* out) {
  for (auto phase : {WorkloadPhase::kStarting, WorkloadPhase::kRunning, WorkloadPhase::kExited}) {
    if (to_string(phase) == text) {
      *out = phase;
      return true;
    }
  }
  return false;
}

std::map<std::string, std::string> job_member_env(const JobMemberPlacement& placement) {
  const int per_node = placement.gpus_per_node;
  const std::string port = std::to_string(placement.master_port);
  return {
      {"GPURENT_JOB_ID", placement.job_id},
      {"GPURENT_ARRAY_INDEX", std::to_string(placement.index)},
      {"GPURENT_ARRAY_SIZE", std::to_string(placement.array_size)},
      {"MASTER_ADDR", placement.master_address},
      {"MASTER_PORT", port},
      {"WORLD_SIZE", std::to_string(placement.nodes * per_node)},
      {"LOCAL_WORLD_SIZE", std::to_string(per_node)},
      {"NNODES", std::to_string(placement.nodes)},
      {"NODE_RANK", std::to_string(placement.rank)},
      {"RANK", std::to_string(placement.rank * per_node)},
      {"PET_MASTER_ADDR", placement.master_address},
      {"PET_MASTER_PORT", port},
      {"PET_NNODES", std::to_string(placement.nodes)},
      {"PET_NPROC_PER_NODE", std::to_string(per_node)},
      {"PET_NODE_RANK", std::to_string(placement.rank)},
  };
}

}  // namespace gpurent::model
