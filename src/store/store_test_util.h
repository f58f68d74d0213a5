// Helpers of the store's tests: the rows the controller makes, built by hand.
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>

#include "controller/change_set.h"
#include "model/instance.h"
#include "model/job.h"

namespace gpurent::store::test {

inline model::Transfer transfer(std::string id, Micros amount) {
  return {std::move(id),
          from_unix_ms(1000),
          "external:topups",
          "tenant:t-1:cash",
          amount,
          model::TransferKind::kTopup,
          "t-1",
          "note"};
}

inline controller::ChangeSet tenant_change(std::string id) {
  controller::ChangeSet changes;
  changes.tenants.push_back({std::move(id), "someone", from_unix_ms(5)});
  return changes;
}

inline model::Job job_with_tasks(const std::string& id, int tasks) {
  model::Job job;
  job.id = id;
  job.tenant_id = "t-1";
  job.spec.task.gpu_types = {"h100-80g"};
  job.spec.task.command = {"true"};
  job.spec.array = tasks;
  job.created_at = from_unix_ms(1000);
  job.revision = 1;
  for (int i = 0; i < tasks; ++i) {
    job.tasks.push_back({i, model::JobState::kQueued, 0, std::nullopt, {fmt::format("i-{}", i)}});
  }
  return job;
}

// A gang job's members as the controller makes them (create_job, place_members): member
// (0, 0) and (0, 1) placed with their gang's master, member (1, 0) and (1, 1) still queued.
inline std::vector<model::Instance> gang_members(const model::Job& job) {
  std::vector<model::Instance> members;
  for (int index = 0; index < job.spec.array; ++index) {
    for (int rank = 0; rank < job.spec.nodes; ++rank) {
      model::Instance member;
      member.id = fmt::format("i-{}-{}", index, rank);
      member.tenant_id = job.tenant_id;
      member.spec = model::job_member_spec(job, index, rank);
      member.job_id = job.id;
      member.job_task = index;
      member.job_rank = rank;
      member.created_at = member.queued_at = from_unix_ms(1000);
      member.reason = "waiting for capacity";
      if (index == 0) {
        member.state = model::InstanceState::kRunning;
        member.node_id = fmt::format("n-{}", rank);
        member.gpus = {"GPU-a", "GPU-b"};
        member.gpu_type = "h100-80g";
        member.run = 1;
        member.started_at = from_unix_ms(2000);
        member.placed_generation = 7;
        member.master_address = "10.0.0.1";
        member.master_port = 29501;
      }
      members.push_back(std::move(member));
    }
  }
  return members;
}

}  // namespace gpurent::store::test
