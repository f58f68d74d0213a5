// The members of a job's tasks (model/job.h).
#include <fmt/format.h>

#include "model/job.h"

namespace gpurent::model {

InstanceSpec job_member_spec(const Job& job, int index, int rank) {
  InstanceSpec spec = job.spec.task;
  spec.name = fmt::format("{}-{}-{}", job.spec.task.name, index, rank);
  return spec;
}

JobMemberPlacement job_member_placement(const Job& job, const Instance& member) {
  return {.job_id = job.id,
          .index = member.job_task,
          .array_size = job.spec.array,
          .nodes = job.spec.nodes,
          .rank = member.job_rank,
          .gpus_per_node = job.spec.task.gpu_count,
          .master_address = member.master_address,
          .master_port = member.master_port};
}

}  // namespace gpurent::model
