// Jobs (arrays, gangs, retries, cancel), reservations, quotas, fair share and backfill.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "controller/controller_test_fixture.h"
#include "model/codec.h"

namespace gpurent::controller {
namespace {

using model::JobState;
using model::PricingModel;

class JobsTest : public StoredControllerTest {
 protected:
  model::JobSpec job_spec(int gpus, int array = 1, int nodes = 1) {
    model::JobSpec s;
    s.task = spec(gpus);
    s.array = array;
    s.nodes = nodes;
    return s;
  }
  model::Job submit(const Principal& who, model::JobSpec s) {
    auto created = ctl_.create_job(who, std::move(s), std::nullopt, "");
    EXPECT_TRUE(created) << created.error().message;
    return created->job;
  }
  const model::Job& job(const std::string& id) { return **ctl_.jobs().get(admin_, id); }
  const model::Instance& member(const std::string& job_id, int task, int rank = 0) {
    return get(job(job_id).tasks.at(task).members.at(rank));
  }
  // The job's variables the member's node gives it, from its placement in the desired state.
  std::map<std::string, std::string> served_env(const model::Instance& m) {
    const auto desired = ctl_.fleet().desired_state(m.node_id);
    for (const auto& workload : desired->workloads) {
      if (workload.instance_id != m.id) continue;
      EXPECT_TRUE(workload.job) << m.id;
      return workload.job ? model::job_member_env(*workload.job) : workload.env;
    }
    ADD_FAILURE() << m.id << " is not served to " << m.node_id;
    return {};
  }
  // Every running member of the node reports; `exits` ends some of them.
  void finish(const std::string& instance_id, int exit_code) { run(instance_id, exit_code); }
};

TEST_F(JobsTest, AJobIsNamedByItsIdOrItsName) {
  auto named = job_spec(1);
  named.task.name = "sweep";
  const auto sweep = submit(alice_, named);
  EXPECT_EQ((*ctl_.jobs().get(alice_, "sweep"))->id, sweep.id);
  EXPECT_EQ(ctl_.cancel_job(alice_, "sweep")->id, sweep.id);
  EXPECT_EQ(ctl_.jobs().get(bob_, "sweep").error().code, "job_not_found");
}

TEST_F(JobsTest, ArrayTasksRunWithTheirIndexAndTheJobSucceeds) {
  const auto submitted = submit(alice_, job_spec(2, 4));
  EXPECT_EQ(submitted.state, JobState::kRunning);  // all four fit on the 8 GPUs at once
  for (int task = 0; task < 4; ++task) {
    const auto& m = member(submitted.id, task);
    EXPECT_EQ(m.state, model::InstanceState::kStarting);
    const auto env = served_env(m);
    EXPECT_EQ(env.at("GPURENT_ARRAY_INDEX"), std::to_string(task));
    EXPECT_EQ(env.at("GPURENT_ARRAY_SIZE"), "4");
    EXPECT_EQ(env.at("GPURENT_JOB_ID"), submitted.id);
  }
  // Job members are the job's: not listed with instances, not commanded one by one.
  EXPECT_TRUE(ctl_.instances().list(alice_, {}, "", 100)->items.empty());
  EXPECT_EQ(ctl_.instances().list(alice_, {.job_id = submitted.id}, "", 100)->items.size(), 4u);
  EXPECT_EQ(ctl_.stop_instance(alice_, member(submitted.id, 0).id).error().code, "owned_by_job");
  for (int task = 0; task < 4; ++task) finish(member(submitted.id, task).id, 0);
  EXPECT_EQ(job(submitted.id).state, JobState::kSucceeded);
  EXPECT_EQ(job(submitted.id).tasks[2].exit_code, 0);
  EXPECT_TRUE(job(submitted.id).ended_at);
}

TEST_F(JobsTest, AChangedJobIsHandedToTheStoreOnceperBatch) {
  ctl_.take_changes();
  const auto submitted = submit(alice_, job_spec(1, 50));  // 8 tasks placed, 42 queued
  auto changes = ctl_.take_changes();
  ASSERT_EQ(changes.jobs.size(), 1u);
  EXPECT_EQ(changes.jobs[0].revision, job(submitted.id).revision);
  EXPECT_TRUE(changes.jobs[0].tasks.empty());  // the tasks travel as rows of their own
  EXPECT_EQ(changes.job_tasks.size(), 50u);
  // Each member once, as it is at the end of the batch (created, then 8 of them placed).
  ASSERT_EQ(changes.instances.size(), 50u);
  EXPECT_EQ(changes.instances[0].state, model::InstanceState::kStarting);
  EXPECT_EQ(changes.instances[49].state, model::InstanceState::kPending);
  // The node's new desired set (8 members placed there) moves only its generation, which is
  // not rewritten per placement (kGenerationsBetweenNodeWrites).
  EXPECT_TRUE(changes.nodes.empty());
  EXPECT_EQ(changes.woken_nodes, std::set<std::string>{node_});
  EXPECT_TRUE(ctl_.take_changes().jobs.empty());
}

TEST_F(JobsTest, OnlyTheFirstMembersStartRewritesTheJobsRow) {
  add_node("node-b", "h100-80g", 8, "GPU-b");
  const auto submitted = submit(alice_, job_spec(1, 16));  // 8 tasks on each node
  const auto& tasks = job(submitted.id).tasks;
  const std::string on_first = tasks.front().members.front();
  const auto on_other = std::ranges::find_if(tasks, [&](const model::JobTask& task) {
    return get(task.members.front()).node_id != get(on_first).node_id;
  });
  ASSERT_NE(on_other, tasks.end());
  ctl_.take_changes();

  run(on_first);  // one node's report: its 8 tasks run, and so does the job
  auto first = ctl_.take_changes();
  ASSERT_EQ(first.jobs.size(), 1u);
  EXPECT_EQ(first.jobs[0].state, JobState::kRunning);
  EXPECT_TRUE(first.jobs[0].started_at);

  run(on_other->members.front());  // the other node's: the job's row is as it was
  const auto second = ctl_.take_changes();
  EXPECT_TRUE(second.jobs.empty());
  EXPECT_EQ(second.usage.size(), 8u);
  EXPECT_EQ(job(submitted.id).started_at, first.jobs[0].started_at);
  for (const auto& task : job(submitted.id).tasks) EXPECT_EQ(task.state, JobState::kRunning);
}

void expect_same_job(const model::Job& stored, const model::Job& live) {
  EXPECT_EQ(live.state, model::derive_job_state(live.tasks));
  EXPECT_EQ(stored.state, live.state);
  EXPECT_EQ(stored.revision, live.revision);
  EXPECT_EQ(stored.started_at, live.started_at);
  EXPECT_EQ(stored.ended_at, live.ended_at);
  EXPECT_EQ(stored.reason, live.reason);
  ASSERT_EQ(stored.tasks.size(), live.tasks.size());
  for (size_t i = 0; i < live.tasks.size(); ++i) {
    EXPECT_EQ(stored.tasks[i].index, live.tasks[i].index) << i;
    EXPECT_EQ(stored.tasks[i].state, live.tasks[i].state) << i;
    EXPECT_EQ(stored.tasks[i].attempts, live.tasks[i].attempts) << i;
    EXPECT_EQ(stored.tasks[i].exit_code, live.tasks[i].exit_code) << i;
    EXPECT_EQ(stored.tasks[i].members, live.tasks[i].members) << i;
  }
}

TEST_F(JobsTest, PlacedRowsHandedOverMidCommandAndTheCommandsChangeSetWriteEveryMemberOnce) {
  add_node("node-b", "h100-80g", 8, "GPU-b");
  commit(ctl_);
  std::vector<ChangeSet> pieces;
  ctl_.stream_placed_rows([&](ChangeSet piece) { pieces.push_back(std::move(piece)); }, 5);
  const auto submitted = submit(alice_, job_spec(1, 20));  // 16 fit on the two nodes, 4 wait
  ASSERT_EQ(pieces.size(), 3u);                            // after 5, 10 and 15 placements
  std::map<std::string, std::string> written;
  std::set<std::string> streamed;
  std::set<int> streamed_tasks;
  for (const auto& piece : pieces) {
    EXPECT_EQ(piece.instance_rows.size(), 5u);
    EXPECT_TRUE(piece.jobs.empty() && piece.woken_nodes.empty());
    for (const auto& row : piece.instance_rows) {
      written[row.id] = row.body;
      streamed.insert(row.id);
    }
    // With each placed member, its task (one member each here).
    EXPECT_EQ(piece.job_tasks.size(), 5u);
    for (const auto& change : piece.job_tasks) {
      EXPECT_EQ(change.task.attempts, 1);
      streamed_tasks.insert(change.task.index);
    }
    EXPECT_TRUE(store_->stage(piece));
  }
  // The command's own ChangeSet: the 16th placed member and the 4 waiting, not the 15 again.
  const ChangeSet rest = commit(ctl_);
  EXPECT_EQ(rest.instance_rows.size(), 5u);
  for (const auto& row : rest.instance_rows) {
    EXPECT_FALSE(streamed.contains(row.id)) << row.id;
    written[row.id] = row.body;
  }
  EXPECT_EQ(rest.job_tasks.size(), 5u);
  for (const auto& change : rest.job_tasks) {
    EXPECT_FALSE(streamed_tasks.contains(change.task.index)) << change.task.index;
  }
  ASSERT_EQ(written.size(), 20u);
  for (int task = 0; task < 20; ++task) {
    const auto& m = member(submitted.id, task);
    EXPECT_EQ(written.at(m.id), model::instance_row_json(m)) << task;
  }
  // And the store, pieces and all, gives back what the controller holds.
  const auto restored = restarted(8);
  expect_same_job(**restored->jobs().get(admin_, submitted.id), job(submitted.id));
  for (int task = 0; task < 20; ++task) {
    const auto& m = member(submitted.id, task);
    EXPECT_EQ(Json(**restored->instances().get(admin_, m.id)), Json(m)) << task;
  }
}

TEST_F(JobsTest, ARowHandedOverAndChangedAgainInTheSameBatchIsWrittenAgain) {
  commit(ctl_);
  std::vector<ChangeSet> pieces;
  ctl_.stream_placed_rows([&](ChangeSet piece) { pieces.push_back(std::move(piece)); }, 2);
  const auto submitted = submit(alice_, job_spec(1, 4));
  ASSERT_EQ(pieces.size(), 2u);
  ASSERT_TRUE(ctl_.cancel_job(alice_, submitted.id));  // before the batch is taken
  const ChangeSet rest = ctl_.take_changes(Controller::Form::kStoreRows);
  ASSERT_EQ(rest.job_tasks.size(), 4u);
  for (const auto& change : rest.job_tasks) EXPECT_EQ(change.task.state, JobState::kCancelled);
  std::map<std::string, std::string> rows;
  for (const auto& row : rest.instance_rows) rows[row.id] = row.body;
  for (int task = 0; task < 4; ++task) {
    const auto& m = member(submitted.id, task);
    ASSERT_TRUE(rows.contains(m.id)) << task;
    EXPECT_EQ(rows.at(m.id), model::instance_row_json(m)) << task;
  }
  // Without a sink nothing is handed over.
  ctl_.stream_placed_rows({}, 0);
  pieces.clear();
  submit(alice_, job_spec(1, 4));
  EXPECT_TRUE(pieces.empty());
  EXPECT_EQ(ctl_.take_changes(Controller::Form::kStoreRows).instance_rows.size(), 4u);
}

TEST_F(JobsTest, OnlyChangedTasksAreWrittenAndAStoreRestartRebuildsTheJob) {
  uint64_t seed = 100;
  const auto expect_restored = [&](const std::string& id) {
    const auto back = restarted(++seed);
    const auto restored = back->jobs().get(admin_, id);
    ASSERT_TRUE(restored);
    expect_same_job(**restored, job(id));
  };
  auto s = job_spec(2, 5);  // four tasks fit on the node at once
  s.retries = 1;
  const auto submitted = submit(alice_, s);
  EXPECT_EQ(commit(ctl_).job_tasks.size(), 5u);
  expect_restored(submitted.id);

  // The agent reports all four placed members running: no task row is written, the members'
  // rows say so.
  run(member(submitted.id, 0).id);
  EXPECT_EQ(job(submitted.id).tasks[3].state, JobState::kRunning);
  EXPECT_TRUE(commit(ctl_).job_tasks.empty());
  expect_restored(submitted.id);

  // Task 0 succeeds: its row changes, and task 4's, placed in the room it left; no other task's.
  finish(member(submitted.id, 0).id, 0);
  std::set<int> written;
  for (const auto& change : commit(ctl_).job_tasks) written.insert(change.task.index);
  EXPECT_EQ(written, (std::set<int>{0, 4}));
  expect_restored(submitted.id);

  // Task 1 fails and is retried (queued again, its members pending: not running at restore),
  // then fails for good; then the rest is cancelled.
  finish(member(submitted.id, 1).id, 3);
  commit(ctl_);
  EXPECT_EQ(job(submitted.id).tasks[1].attempts, 2);
  expect_restored(submitted.id);
  run(member(submitted.id, 1).id);
  commit(ctl_);
  expect_restored(submitted.id);
  finish(member(submitted.id, 1).id, 4);
  commit(ctl_);
  expect_restored(submitted.id);
  EXPECT_EQ(job(submitted.id).tasks[1].state, JobState::kFailed);
  ASSERT_TRUE(ctl_.cancel_job(alice_, submitted.id));
  commit(ctl_);
  expect_restored(submitted.id);
  EXPECT_EQ(job(submitted.id).tasks[4].state, JobState::kCancelled);
}

TEST_F(JobsTest, AGangTaskWithOneMemberDoneIsStillRunningAfterARestart) {
  add_node("node-b", "h100-80g", 8, "GPU-b");
  const auto submitted = submit(alice_, job_spec(8, 1, 2));  // one member per node
  run(member(submitted.id, 0, 0).id);
  run(member(submitted.id, 0, 1).id);
  finish(member(submitted.id, 0, 1).id, 0);  // rank 1 is done; rank 0 still runs
  commit(ctl_);
  ASSERT_EQ(job(submitted.id).tasks[0].state, JobState::kRunning);
  const auto back = restarted(5);
  const auto restored = back->jobs().get(admin_, submitted.id);
  ASSERT_TRUE(restored);
  expect_same_job(**restored, job(submitted.id));
}

TEST_F(JobsTest, JobListingsArePagesInCreationOrderFilteredByTenantAndState) {
  std::vector<std::string> mine;
  for (int i = 0; i < 5; ++i) mine.push_back(submit(alice_, job_spec(8)).id);  // 1 runs
  const auto theirs = submit(bob_, job_spec(1)).id;
  std::vector<std::string> seen;
  std::string cursor;
  for (int page = 0;; ++page) {
    auto listed = ctl_.jobs().list(alice_, {}, cursor, 2);
    ASSERT_TRUE(listed) << listed.error().message;
    EXPECT_LE(listed->items.size(), 2u);
    for (const auto* job : listed->items) seen.push_back(job->id);
    if (!listed->next_cursor) break;
    cursor = *listed->next_cursor;
    ASSERT_LT(page, 3);
  }
  EXPECT_EQ(seen, mine);  // bob's is not alice's to see, even with tenant set
  EXPECT_EQ(ctl_.jobs().list(alice_, {.tenant_id = bob_.tenant_id}, "", 10)->items.size(), 5u);
  EXPECT_EQ(ctl_.jobs().list(alice_, {}, theirs, 10).error().code, "invalid_query");
  EXPECT_EQ(ctl_.jobs().list(alice_, {}, "j-made-up", 10).error().code, "invalid_query");
  const auto queued = ctl_.jobs().list(admin_, {.state = JobState::kQueued}, "", 10);
  ASSERT_EQ(queued->items.size(), 5u);  // alice's first was placed: it runs
  EXPECT_EQ(queued->items[0]->id, mine[1]);
  EXPECT_EQ(queued->items[4]->id, theirs);
  EXPECT_FALSE(queued->next_cursor);
  const auto bobs = ctl_.jobs().list(admin_, {.tenant_id = bob_.tenant_id}, "", 10);
  ASSERT_EQ(bobs->items.size(), 1u);
  EXPECT_EQ(bobs->items[0]->id, theirs);
}

TEST_F(JobsTest, RestoredJobsAreListedInCreationOrderWithWorkingCursors) {
  Snapshot snapshot;
  for (const auto& [id, ms] : {std::pair{"j-c", 3}, {"j-a", 1}, {"j-b", 2}}) {
    model::Job job;
    job.id = id;
    job.tenant_id = alice_.tenant_id;
    job.created_at = from_unix_ms(ms);
    job.state = JobState::kSucceeded;
    snapshot.jobs.push_back(job);
  }
  Controller restored(clock_, {.seed = 1});
  ASSERT_TRUE(restored.restore(std::move(snapshot)));
  const auto first = restored.jobs().list(admin_, {}, "", 2);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->items.size(), 2u);
  EXPECT_EQ(first->items[0]->id, "j-a");
  EXPECT_EQ(first->next_cursor, "j-b");
  const auto rest = restored.jobs().list(admin_, {}, "j-b", 2);
  ASSERT_EQ(rest->items.size(), 1u);
  EXPECT_EQ(rest->items[0]->id, "j-c");
}

TEST_F(JobsTest, AFailingTaskIsRetriedThenFailsWithItsExitCode) {
  auto s = job_spec(1);
  s.retries = 2;
  const auto submitted = submit(alice_, s);
  for (int attempt = 1; attempt <= 3; ++attempt) {
    ASSERT_EQ(member(submitted.id, 0).state, model::InstanceState::kStarting) << attempt;
    EXPECT_EQ(job(submitted.id).tasks[0].attempts, attempt);
    finish(member(submitted.id, 0).id, 3);
  }
  EXPECT_EQ(job(submitted.id).state, JobState::kFailed);
  EXPECT_EQ(job(submitted.id).tasks[0].exit_code, 3);
  EXPECT_EQ(member(submitted.id, 0).run, 3);
}

TEST_F(JobsTest, GangMembersArePlacedTogetherWithTorchrunEnvironment) {
  add_node("node-b", "h100-80g", 8, "GPU-b");
  const auto submitted = submit(alice_, job_spec(8, 1, 2));
  const auto& rank0 = member(submitted.id, 0, 0);
  const auto& rank1 = member(submitted.id, 0, 1);
  ASSERT_EQ(rank0.state, model::InstanceState::kStarting);
  ASSERT_EQ(rank1.state, model::InstanceState::kStarting);
  EXPECT_NE(rank0.node_id, rank1.node_id);
  const auto env0 = served_env(rank0), env1 = served_env(rank1);
  EXPECT_EQ(env1.at("NODE_RANK"), "1");
  EXPECT_EQ(env1.at("RANK"), "8");
  EXPECT_EQ(env1.at("WORLD_SIZE"), "16");
  EXPECT_EQ(env1.at("LOCAL_WORLD_SIZE"), "8");
  // Rank 0's node, by name (the nodes do not advertise an address).
  EXPECT_EQ(env1.at("MASTER_ADDR"), (*ctl_.fleet().nodes().get(admin_, rank0.node_id))->name);
  EXPECT_EQ(env0.at("MASTER_ADDR"), env1.at("MASTER_ADDR"));
  EXPECT_EQ(env0.at("MASTER_PORT"), env1.at("MASTER_PORT"));
  EXPECT_EQ(env0.at("MASTER_PORT"), std::to_string(model::kGangMasterPort));
  // A gang that does not fit waits whole: nothing of it is placed.
  const auto second = submit(bob_, job_spec(8, 1, 2));
  EXPECT_EQ(member(second.id, 0, 0).state, model::InstanceState::kPending);
  EXPECT_EQ(member(second.id, 0, 1).state, model::InstanceState::kPending);
  // One member failing stops the other; the task fails without retries.
  finish(rank1.id, 1);
  EXPECT_EQ(get(rank0.id).state, model::InstanceState::kStopping);
  finish(rank0.id, 143);
  EXPECT_EQ(job(submitted.id).state, JobState::kFailed);
  EXPECT_EQ(job(submitted.id).tasks[0].exit_code, 1);
  // The room it left takes the waiting gang.
  EXPECT_EQ(member(second.id, 0, 1).state, model::InstanceState::kStarting);
}

TEST_F(JobsTest, GangsLedFromOneNodeGetDifferentRendezvousPorts) {
  add_node("node-b", "h100-80g", 8, "GPU-b");
  const auto first = submit(alice_, job_spec(4, 1, 2));
  const auto second = submit(bob_, job_spec(4, 1, 2));
  const auto& a = member(first.id, 0);
  const auto& b = member(second.id, 0);
  ASSERT_EQ(a.node_id, b.node_id);  // both led from the same node...
  const auto env_a = served_env(a);
  EXPECT_NE(env_a.at("MASTER_PORT"), served_env(b).at("MASTER_PORT"));  // ...apart
  EXPECT_EQ(env_a.at("PET_MASTER_PORT"), env_a.at("MASTER_PORT"));
  EXPECT_EQ(served_env(member(first.id, 0, 1)).at("PET_NODE_RANK"), "1");
}

TEST_F(JobsTest, CancelWithdrawsQueuedTasksAndStopsRunningOnes) {
  const auto submitted = submit(alice_, job_spec(4, 3));  // two fit, one waits
  ASSERT_TRUE(ctl_.cancel_job(alice_, submitted.id));
  EXPECT_EQ(job(submitted.id).state, JobState::kCancelled);
  EXPECT_EQ(member(submitted.id, 2).state, model::InstanceState::kStopped);
  EXPECT_EQ(member(submitted.id, 0).state, model::InstanceState::kStopping);
  finish(member(submitted.id, 0).id, 143);
  EXPECT_EQ(job(submitted.id).tasks[0].state, JobState::kCancelled);
  EXPECT_EQ(ctl_.cancel_job(bob_, submitted.id).error().kind, ErrorKind::kNotFound);
}

TEST_F(JobsTest, SpotJobsArePreemptedByOnDemandWork) {
  auto s = job_spec(8);
  s.task.pricing = PricingModel::kSpot;
  const auto submitted = submit(alice_, s);
  run(member(submitted.id, 0).id);
  const auto urgent = launch(bob_, 4);
  EXPECT_EQ(urgent.state, model::InstanceState::kPending);
  finish(member(submitted.id, 0).id, 143);
  EXPECT_EQ(job(submitted.id).state, JobState::kPreempted);
  EXPECT_EQ(get(urgent.id).state, model::InstanceState::kStarting);
}

TEST_F(JobsTest, BadJobShapesAreRefused) {
  EXPECT_EQ(ctl_.create_job(alice_, job_spec(1, 0), std::nullopt, "").error().kind,
            ErrorKind::kInvalidArgument);
  EXPECT_EQ(ctl_.create_job(alice_, job_spec(1, 1, 0), std::nullopt, "").error().kind,
            ErrorKind::kInvalidArgument);
  EXPECT_EQ(ctl_.create_job(alice_, job_spec(1, 100'000, 2), std::nullopt, "").error().kind,
            ErrorKind::kInvalidArgument);
  auto shared_gang = job_spec(1, 1, 2);
  shared_gang.task.gpu_milli = 500;
  EXPECT_FALSE(ctl_.create_job(alice_, shared_gang, std::nullopt, ""));
}

TEST_F(JobsTest, BackfillLetsShortJobsRunAheadOnlyIfTheyEndInTime) {
  // A 6-GPU job with a declared end holds the node; an 8-GPU request waits for it.
  auto long_job = job_spec(6);
  long_job.task.max_runtime_s = 3600;
  const auto holder = submit(alice_, long_job);
  run(member(holder.id, 0).id);
  const auto big = launch(bob_, 8);
  EXPECT_EQ(big.state, model::InstanceState::kPending);
  // Two GPUs are free. A job that ends before the big request could start may use them...
  auto short_job = job_spec(2);
  short_job.task.max_runtime_s = 600;
  const auto quick = submit(bob_, short_job);
  EXPECT_EQ(member(quick.id, 0).state, model::InstanceState::kStarting);
  finish(member(quick.id, 0).id, 0);
  // ...one that would outlast it may not, nor one without a declared end.
  auto too_long = job_spec(2);
  too_long.task.max_runtime_s = 7200;
  const auto slow = submit(bob_, too_long);
  EXPECT_EQ(member(slow.id, 0).state, model::InstanceState::kPending);
  EXPECT_EQ(launch(bob_, 2).state, model::InstanceState::kPending);
}

TEST_F(JobsTest, QuotasCapGpusPerTypeAndInstances) {
  ASSERT_TRUE(ctl_.set_quota(admin_, {alice_.tenant_id, {{"h100-80g", 2}}, std::nullopt, 1}));
  EXPECT_EQ(ctl_.set_quota(alice_, {alice_.tenant_id, {}, std::nullopt, 1}).error().kind,
            ErrorKind::kPermissionDenied);
  const auto a = launch(alice_, 1);
  const auto b = launch(alice_, 1);
  const auto c = launch(alice_, 1);
  EXPECT_EQ(get(c.id).state, model::InstanceState::kPending);
  EXPECT_NE(get(c.id).reason.find("quota"), std::string::npos);
  EXPECT_EQ(launch(bob_, 1).state, model::InstanceState::kStarting);  // others are not held up
  run(a.id);
  ASSERT_TRUE(ctl_.stop_instance(alice_, a.id));
  run(a.id, 143);
  EXPECT_EQ(get(c.id).state, model::InstanceState::kStarting);
  ASSERT_TRUE(ctl_.set_quota(admin_, {alice_.tenant_id, {}, 2, 1}));
  EXPECT_EQ(launch(alice_, 1).state, model::InstanceState::kPending);
  EXPECT_EQ(ctl_.accounts().quotas().get(bob_, alice_.tenant_id).error().kind,
            ErrorKind::kNotFound);
  EXPECT_EQ(ctl_.accounts().quotas().get(alice_, alice_.tenant_id)->max_instances, 2);
  (void)b;
}

TEST_F(JobsTest, CapsRefuseWorkBeyondTheQueueAndArrayLimitsAtOnce) {
  ASSERT_TRUE(
      ctl_.set_quota(admin_, {.tenant_id = alice_.tenant_id, .max_queued = 3, .max_array = 4}));
  const auto blocker = launch(bob_, 8);  // the node is full: everything of alice's waits
  EXPECT_EQ(blocker.state, model::InstanceState::kStarting);
  const auto first = launch(alice_, 1);
  const auto job = submit(alice_, job_spec(1, 2));  // two tasks: 3 waiting now
  EXPECT_EQ(ctl_.queued_work(alice_.tenant_id), 3);

  // One more waiting instance, or a task more, is refused, and nothing of it is kept.
  const auto instances_before = ctl_.instances().all().size();
  const auto refused = ctl_.create_instance(alice_, spec(1), std::nullopt, "");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "quota_exceeded");
  EXPECT_EQ(refused.error().kind, ErrorKind::kConflict);
  EXPECT_EQ(ctl_.create_job(alice_, job_spec(1, 1), std::nullopt, "").error().code,
            "quota_exceeded");
  EXPECT_EQ(ctl_.instances().all().size(), instances_before);
  // An array over max_array never fits: 422, whatever waits.
  const auto too_large = ctl_.create_job(alice_, job_spec(1, 5), std::nullopt, "");
  ASSERT_FALSE(too_large);
  EXPECT_EQ(too_large.error().kind, ErrorKind::kUnprocessable);
  // Other tenants are not held to alice's caps.
  EXPECT_EQ(launch(bob_, 1).state, model::InstanceState::kPending);

  // Work that leaves the queue makes room: the first instance, withdrawn.
  ASSERT_TRUE(ctl_.stop_instance(alice_, first.id));
  EXPECT_EQ(ctl_.queued_work(alice_.tenant_id), 2);
  ASSERT_TRUE(ctl_.create_instance(alice_, spec(1), std::nullopt, ""));
  // Starting a stopped instance queues it again, so it counts too.
  EXPECT_EQ(ctl_.start_instance(alice_, first.id).error().code, "quota_exceeded");
  ASSERT_TRUE(ctl_.cancel_job(alice_, job.id));
  EXPECT_EQ(ctl_.queued_work(alice_.tenant_id), 1);
  EXPECT_TRUE(ctl_.start_instance(alice_, first.id));
}

TEST_F(JobsTest, ContendedCapacityIsSharedByWeight) {
  // Both tenants queue eight 1-GPU jobs while the node is full; as it frees up they alternate,
  // bob (weight 3) getting three GPUs for each of alice's.
  ASSERT_TRUE(ctl_.set_quota(admin_, {bob_.tenant_id, {}, std::nullopt, 3}));
  const auto blocker = launch(tenant_principal("carol"), 8);
  std::vector<model::Job> alice_jobs, bob_jobs;
  for (int i = 0; i < 8; ++i) {
    alice_jobs.push_back(submit(alice_, job_spec(1)));
    clock_.advance(Millis(1));
  }
  for (int i = 0; i < 8; ++i) bob_jobs.push_back(submit(bob_, job_spec(1)));
  run(blocker.id);
  ASSERT_TRUE(ctl_.stop_instance(admin_, blocker.id));  // operators may stop anyone's
  run(blocker.id, 143);
  int alice_running = 0, bob_running = 0;
  for (const auto& j : alice_jobs) alice_running += job(j.id).state == JobState::kRunning;
  for (const auto& j : bob_jobs) bob_running += job(j.id).state == JobState::kRunning;
  EXPECT_EQ(alice_running + bob_running, 8);
  EXPECT_EQ(bob_running, 6);
  EXPECT_EQ(alice_running, 2);
}

TEST_F(JobsTest, AReservationRetriedWithItsIdempotencyKeyIsBookedOnce) {
  const Timestamp start = clock_.now() + Millis(3'600'000);
  const NewReservation booking{"", "h100-80g", 4, start, start + Millis(3'600'000)};
  auto first = ctl_.create_reservation(alice_, booking, "key-1", "body-a");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_FALSE(first->replayed);
  auto again = ctl_.create_reservation(alice_, booking, "key-1", "body-a");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->reservation.id, first->reservation.id);
  EXPECT_EQ(ctl_.reservations().list(alice_).size(), 1u);
  EXPECT_EQ(ctl_.create_reservation(alice_, booking, "key-1", "body-b").error().code,
            "idempotency_key_reused");
  // Keys are per tenant: bob's "key-1" books anew (4 more of the 8 GPUs).
  auto bobs = ctl_.create_reservation(bob_, booking, "key-1", "body-a");
  ASSERT_TRUE(bobs);
  EXPECT_FALSE(bobs->replayed);
}

TEST_F(JobsTest, ReservationsRefuseOverbookingAndHoldCapacity) {
  const Timestamp start = clock_.now() + Millis(3'600'000);
  const Timestamp end = start + Millis(7'200'000);
  auto booked = ctl_.create_reservation(alice_, {"", "h100-80g", 6, start, end});
  ASSERT_TRUE(booked) << booked.error().message;
  EXPECT_EQ(
      ctl_.create_reservation(bob_, {"", "h100-80g", 3, start + Millis(60'000), end}).error().code,
      "overbooked");
  EXPECT_TRUE(ctl_.create_reservation(bob_, {"", "h100-80g", 2, start, end}));
  EXPECT_TRUE(ctl_.create_reservation(bob_, {"", "h100-80g", 8, end, end + Millis(1000)}));
  EXPECT_TRUE(ctl_.reservations().list(bob_).size() == 2);
  // Before the window: on-demand work without a declared end may not take held GPUs...
  EXPECT_EQ(launch(bob_, 1).state, model::InstanceState::kPending);
  // ...spot work may (and is preempted later), and so may work that ends before the window.
  auto early = spec(2);
  early.max_runtime_s = 1800;
  EXPECT_EQ(launch(bob_, early).state, model::InstanceState::kStarting);
  // In the window, the holder's reserved work runs.
  clock_.advance(Millis(3'600'000));
  report(node_, {});  // the node is still there (and the early work is gone)
  auto reserved = spec(4);
  reserved.pricing = PricingModel::kReserved;
  reserved.reservation_id = booked->reservation.id;
  const auto used = launch(alice_, reserved);
  ctl_.tick();
  EXPECT_EQ(get(used.id).state, model::InstanceState::kStarting);
  reserved.reservation_id = "r-unknown";
  EXPECT_EQ(ctl_.create_instance(alice_, reserved, std::nullopt, "").error().kind,
            ErrorKind::kNotFound);
  EXPECT_TRUE(ctl_.cancel_reservation(alice_, booked->reservation.id));
  EXPECT_EQ(get(used.id).state, model::InstanceState::kStopping);
}

// A member's files are kept on its node while it runs, and go when its run ends: its task runs
// again as a new run, anywhere (DesiredState::instances).
TEST_F(JobsTest, AMembersFilesAreKeptOnItsNodeOnlyWhileItRuns) {
  const auto submitted = submit(alice_, job_spec(1, 2));
  const std::string first = member(submitted.id, 0).id;
  const std::string second = member(submitted.id, 1).id;
  run(first);
  run(second);
  std::vector<std::string> both = {first, second};
  std::ranges::sort(both);
  EXPECT_EQ(ctl_.fleet().desired_state(node_)->instances, both);
  finish(first, 0);
  EXPECT_EQ(ctl_.fleet().desired_state(node_)->instances, std::vector<std::string>{second});
  commit(ctl_);
  const auto again = restarted(8);
  EXPECT_EQ(again->fleet().desired_state(node_)->instances, std::vector<std::string>{second});
}

}  // namespace
}  // namespace gpurent::controller
