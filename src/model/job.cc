// The members of a job's tasks (model/job.h).
#include <fmt/format.h>

#include "model/job.h"

namespace gpurent::model {

InstanceSpec job_member_spec(const Job& job, int index, int rank) {
  InstanceSpec spec = job.spec.task;
  spec.name = fmt::format("{}-{}-{}", job.spec.task.name, index, rank);
  return spec;
}

std::map<std::string, std::string> job_member_env(const Job& job, const Instance& member) {
  const int per_node = job.spec.task.gpu_count;
  const int index = member.job_task, rank = member.job_rank;
  const std::string& address = member.master_address;
  const std::string port = std::to_string(member.master_port);
  // torchrun's view: one launcher per node, LOCAL_WORLD_SIZE processes each; RANK is the global
  // rank of the node's first process. The PET_* variables configure a bare `torchrun`.
  return {
      {"GPURENT_JOB_ID", job.id},
      {"GPURENT_ARRAY_INDEX", std::to_string(index)},
      {"GPURENT_ARRAY_SIZE", std::to_string(job.spec.array)},
      {"MASTER_ADDR", address},
      {"MASTER_PORT", port},
      {"WORLD_SIZE", std::to_string(job.spec.nodes * per_node)},
      {"LOCAL_WORLD_SIZE", std::to_string(per_node)},
      {"NNODES", std::to_string(job.spec.nodes)},
      {"NODE_RANK", std::to_string(rank)},
      {"RANK", std::to_string(rank * per_node)},
      {"PET_MASTER_ADDR", address},
      {"PET_MASTER_PORT", port},
      {"PET_NNODES", std::to_string(job.spec.nodes)},
      {"PET_NPROC_PER_NODE", std::to_string(per_node)},
      {"PET_NODE_RANK", std::to_string(rank)},
  };
}

}  // namespace gpurent::model
