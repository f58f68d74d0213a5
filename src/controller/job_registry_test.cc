#include "controller/job_registry.h"

#include <gtest/gtest.h>

#include "controller/component_test_fixture.h"

namespace gpurent::controller {
namespace {

const model::Principal kAlice{"t-alice", "key-a", model::Role::kTenantAdmin};
const model::Principal kBob{"t-bob", "key-b", model::Role::kTenantAdmin};
const model::Principal kOperator{"", "key-op", model::Role::kOperator};

class JobRegistryTest : public ComponentTest {
 protected:
  model::Job& add(const std::string& id, const std::string& tenant, const std::string& name) {
    model::Job job;
    job.id = id;
    job.tenant_id = tenant;
    job.spec.task.name = name;
    job.tasks.push_back({.index = 0, .members = {id + "-0"}});
    job.created_at = clock_.now();
    return jobs_.add(std::move(job));
  }

  std::vector<std::string> ids(const JobPage& page) {
    std::vector<std::string> out;
    for (const auto* job : page.items) out.push_back(job->id);
    return out;
  }

  JobRegistry jobs_{{clock_, tracker_}};
};

TEST_F(JobRegistryTest, AJobIsFoundByIdOrItsTenantsNameAndIsNobodyElses) {
  add("j-1", "t-alice", "sweep");
  EXPECT_EQ((*jobs_.get(kAlice, "j-1"))->id, "j-1");
  EXPECT_EQ((*jobs_.get(kAlice, "sweep"))->id, "j-1");
  EXPECT_EQ((*jobs_.get(kOperator, "j-1"))->id, "j-1");
  EXPECT_EQ(jobs_.get(kBob, "j-1").error().code, "job_not_found");
  EXPECT_EQ(jobs_.get(kBob, "sweep").error().code, "job_not_found");

  add("j-2", "t-alice", "sweep");
  EXPECT_EQ(jobs_.get(kAlice, "sweep").error().code, "ambiguous_name");
}

TEST_F(JobRegistryTest, ListingsPageInCreationOrderAndACursorMustBeTheCallersJob) {
  add("j-c", "t-alice", "");
  add("j-a", "t-bob", "");
  add("j-b", "t-alice", "");

  const auto first = jobs_.list(kAlice, {}, "", 1);
  ASSERT_TRUE(first);
  EXPECT_EQ(ids(*first), std::vector<std::string>{"j-c"});
  ASSERT_TRUE(first->next_cursor);
  const auto second = jobs_.list(kAlice, {}, *first->next_cursor, 1);
  EXPECT_EQ(ids(*second), std::vector<std::string>{"j-b"});
  EXPECT_EQ(ids(*jobs_.list(kOperator, {}, "", 10)),
            (std::vector<std::string>{"j-c", "j-a", "j-b"}));
  EXPECT_EQ(ids(*jobs_.list(kOperator, {.tenant_id = "t-bob"}, "", 10)),
            std::vector<std::string>{"j-a"});
  // Bob's job is no cursor for Alice, nor is a made-up one.
  EXPECT_EQ(jobs_.list(kAlice, {}, "j-a", 10).error().code, "invalid_query");
  EXPECT_EQ(jobs_.list(kAlice, {}, "j-none", 10).error().code, "invalid_query");
}

TEST_F(JobRegistryTest, TheFirstMemberToStartMarksItsTaskAndJobRunningOnce) {
  model::Job& job = add("j-1", "t-alice", "");
  model::Instance member;
  member.id = "j-1-0";
  member.job_id = "j-1";
  member.job_task = 0;
  ASSERT_EQ(jobs_.of(member), &job);

  jobs_.member_started(member);
  EXPECT_EQ(job.tasks[0].state, model::JobState::kRunning);
  EXPECT_EQ(job.state, model::JobState::kRunning);
  EXPECT_EQ(job.started_at, clock_.now());
  EXPECT_EQ(tracker_.take_changes().jobs.size(), 1u);

  clock_.advance(Millis(1'000));
  jobs_.member_started(member);  // a second report of the same start
  EXPECT_EQ(job.started_at, clock_.now() - Millis(1'000));
  EXPECT_TRUE(tracker_.take_changes().jobs.empty());

  model::Instance alone;
  alone.id = "i-1";
  EXPECT_EQ(jobs_.of(alone), nullptr);
}

TEST_F(JobRegistryTest, RestoreKeepsTheCreationOrder) {
  std::vector<model::Job> stored(3);
  stored[0].id = "j-late";
  stored[0].created_at = clock_.now() + Millis(2);
  stored[1].id = "j-early";
  stored[1].created_at = clock_.now();
  stored[2].id = "j-middle";
  stored[2].created_at = clock_.now() + Millis(1);
  jobs_.restore(std::move(stored));
  EXPECT_EQ(ids(*jobs_.list(kOperator, {}, "", 10)),
            (std::vector<std::string>{"j-early", "j-middle", "j-late"}));
}

}  // namespace
}  // namespace gpurent::controller
