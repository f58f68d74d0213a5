#include "controller/job_registry.h"

#include <algorithm>
#include <tuple>

#include "controller/internal.h"

namespace gpurent::controller {

using model::Job;
using model::JobState;
using model::JobTask;

void JobRegistry::restore(std::vector<Job> jobs) {
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) {
    return std::tie(a.created_at, a.id) < std::tie(b.created_at, b.id);
  });
  for (auto& job : jobs) add(std::move(job));
}

Job& JobRegistry::add(Job&& job) {
  std::string id = job.id;
  Job& added = jobs_.emplace(id, std::move(job)).first->second;
  position_[id] = order_.size();
  order_.push_back(std::move(id));
  return added;
}

Job* JobRegistry::of(const model::Instance& instance) {
  const auto it = jobs_.find(instance.job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const Job* JobRegistry::of(const model::Instance& instance) const {
  const auto it = jobs_.find(instance.job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

Result<const Job*> JobRegistry::get(const model::Principal& caller, std::string_view id) const {
  const auto it = jobs_.find(id);
  if (it != jobs_.end() && detail::visible_to(caller, it->second.tenant_id)) return &it->second;
  std::vector<std::pair<const Job*, detail::NamedObject>> candidates;
  for (const auto& job_id : order_) {
    const Job& candidate = jobs_.at(job_id);
    if (candidate.tenant_id == caller.tenant_id) {
      candidates.push_back({&candidate, {candidate.id, candidate.spec.task.name}});
    }
  }
  return detail::find_by_name<Job>("job", id, candidates);
}

Result<JobPage> JobRegistry::list(const model::Principal& caller, const JobFilter& filter,
                                  std::string_view cursor, size_t limit) const {
  size_t position = 0;
  if (!cursor.empty()) {
    const auto it = position_.find(std::string(cursor));
    // A cursor names a job; one the caller may not see is as unknown as a made-up one.
    if (it == position_.end() || !get(caller, cursor)) {
      return fail(Error::invalid("invalid_query", "unknown cursor"));
    }
    position = it->second + 1;
  }
  const std::optional<std::string> tenant =
      caller.is_operator() ? filter.tenant_id : caller.tenant_id;
  JobPage page;
  for (; position < order_.size(); ++position) {
    const Job& job = jobs_.at(order_[position]);
    if (tenant && job.tenant_id != *tenant) continue;
    if (filter.state && job.state != *filter.state) continue;
    if (page.items.size() == limit) {
      page.next_cursor = page.items.back()->id;
      break;
    }
    page.items.push_back(&job);
  }
  return page;
}

void JobRegistry::member_started(const model::Instance& member) {
  Job* job = of(member);
  if (!job) return;
  JobTask& task = job->tasks.at(member.job_task);
  if (task.state != JobState::kQueued) return;
  // Not written: the member's row says it started, and the controller's restore reads the task's
  // state from there (an array's start would otherwise write every task row a second time).
  task.state = JobState::kRunning;
  // The job's own row changes with its first running member only (what derive_job_state gives
  // with a task running, without its pass over every task: per task, that pass made starting an
  // array quadratic). Touched for every member, each agent's report of an array's start carried
  // a copy of the job, and the committer wrote the row once per report in every group commit.
  if (job->started_at && job->reason.empty() && job->state == JobState::kRunning) return;
  if (!job->started_at) job->started_at = c_.clock.now();
  job->reason = "";
  job->state = JobState::kRunning;
  c_.tracker.touch_job(*job);
}

}  // namespace gpurent::controller
