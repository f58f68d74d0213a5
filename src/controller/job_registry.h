// JobRegistry: the batch jobs (model/job.h), by id and in creation order: lookups by id or by the
// tenant's name for a job, tenants' and operators' listings, and the job a member instance
// belongs to. A task's state follows its members' runs; the first member that starts marks its
// task (and job) running here (member_started). Creating jobs, cancelling them and settling a
// task once its members are gone move instances, and stay the controller's (jobs.cc).
//
// Invariants: jobs are never removed; the creation order lists every job once; a job is visible
// to its own tenant and to operators only (to anyone else it does not exist); every change is
// touched in the ChangeTracker.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/indexed_map.h"
#include "common/result.h"
#include "controller/change_tracker.h"
#include "controller/commands.h"
#include "model/instance.h"
#include "model/job.h"
#include "model/tenant.h"

namespace gpurent::controller {

class JobRegistry {
 public:
  struct Context {
    const Clock& clock;
    ChangeTracker& tracker;
  };
  explicit JobRegistry(Context context) : c_(context) {}
  JobRegistry(const JobRegistry&) = delete;
  JobRegistry& operator=(const JobRegistry&) = delete;

  // The jobs from the store's snapshot (their tasks' states already derived from the members).
  void restore(std::vector<model::Job> jobs);
  // A new job, last in the creation order.
  model::Job& add(model::Job&& job);

  // By id, or by the caller's own name for it; another tenant's is not found.
  Result<const model::Job*> get(const model::Principal& caller, std::string_view id) const;
  // A page of the jobs the caller sees (operators: all, or those of filter.tenant_id), in
  // creation order, after the job named by `cursor` (empty: from the first); next_cursor names
  // the last item when more may follow.
  Result<JobPage> list(const model::Principal& caller, const JobFilter& filter,
                       std::string_view cursor, size_t limit) const;
  // The job of a member instance; null for an instance of its own.
  model::Job* of(const model::Instance& instance);
  const model::Job* of(const model::Instance& instance) const;
  const IndexedMap<model::Job>& all() const { return jobs_; }
  model::Job& at(std::string_view id) { return jobs_.at(id); }
  const model::Job& at(std::string_view id) const { return jobs_.at(id); }

  // A member's process runs: its task (and job) is running. The task's row is not written for
  // this: a restore derives it from the members' rows.
  void member_started(const model::Instance& member);

 private:
  Context c_;
  IndexedMap<model::Job> jobs_;
  std::vector<std::string> order_;                    // creation order, for listings
  std::unordered_map<std::string, size_t> position_;  // index in order_
};

}  // namespace gpurent::controller
