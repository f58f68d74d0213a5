// Self-healing: work on a node that stops reporting moves to healthy capacity by its restart
// policy, keeps its id, is billed for neither the silence nor twice, and a node that comes back
// is fenced (its stale runs are ignored and left out of its desired set).
#include <gtest/gtest.h>

#include "controller/controller_test_fixture.h"

namespace gpurent::controller {
namespace {

using model::InstanceState;

class HealingTest : public ControllerTest {
 protected:
  // The node goes silent; the others keep reporting what they run until it is marked down.
  void fail_node(const std::string& failed, const std::vector<std::string>& healthy) {
    for (int second = 0; second <= 10; ++second) {
      clock_.advance(Millis(1'000));
      for (const auto& node : healthy) report_desired(node);
      ctl_.tick();
    }
    ASSERT_EQ((*ctl_.fleet().nodes().get(admin_, failed))->state, model::NodeState::kDown);
  }
  // The node's agent reports every workload of its desired set as running.
  void report_desired(const std::string& node) {
    std::vector<model::WorkloadStatus> workloads;
    const auto desired = ctl_.fleet().desired_state(node);
    for (const auto& w : desired->workloads) {
      workloads.push_back({w.instance_id, w.run, model::WorkloadPhase::kRunning, std::nullopt, ""});
    }
    report(node, std::move(workloads));
  }
  bool desired_on(const std::string& node, const std::string& instance_id) {
    const auto desired = ctl_.fleet().desired_state(node);
    for (const auto& w : desired->workloads) {
      if (w.instance_id == instance_id) return true;
    }
    return false;
  }
};

TEST_F(HealingTest, OnDemandWorkMovesOffADownNodeKeepingItsIdAndIsNeverBilledTwice) {
  const auto b = add_node("node-b", "h100-80g", 8, "GPU-b");
  const auto instance = launch(alice_, 8);
  const std::string first_node = instance.node_id;
  const std::string other = first_node == node_ ? b : node_;
  run(instance.id);
  const Timestamp last_report = clock_.now();
  EXPECT_EQ(get(instance.id).spec.restart_policy, model::RestartPolicy::kOnNodeFailure);

  fail_node(first_node, {other});
  const auto& moved = get(instance.id);
  EXPECT_EQ(moved.node_id, other);  // placed again at once, on the healthy node
  EXPECT_EQ(moved.state, InstanceState::kStarting);
  EXPECT_EQ(moved.run, 2);
  EXPECT_TRUE(desired_on(other, instance.id));
  EXPECT_FALSE(desired_on(first_node, instance.id));
  // The first run was billed up to the last good report, and ended there.
  const auto usage = ctl_.metering().usage(alice_.tenant_id);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0]->ended_at, last_report);
  EXPECT_EQ(usage[0]->metered_until, last_report);
  const auto events = ctl_.events().list(alice_, {.object_id = instance.id}, 10);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]->kind, model::event_kind::kInstanceMoved);

  report_desired(other);  // the new run starts: billed from now, as run 2
  EXPECT_EQ(get(instance.id).state, InstanceState::kRunning);
  clock_.advance(Millis(30'000));
  report_desired(other);

  // Fencing: the old node comes back still running run 1. The report is ignored, the instance
  // stays where it is, and the old node's desired set does not hold it (its agent stops it).
  report(first_node, {{instance.id, 1, model::WorkloadPhase::kRunning, std::nullopt, ""}});
  EXPECT_EQ((*ctl_.fleet().nodes().get(admin_, first_node))->state, model::NodeState::kReady);
  EXPECT_EQ(get(instance.id).node_id, other);
  EXPECT_EQ(get(instance.id).run, 2);
  EXPECT_FALSE(desired_on(first_node, instance.id));
  report(other, {{instance.id, 2, model::WorkloadPhase::kExited, 0, ""}});
  const auto after = ctl_.metering().usage(alice_.tenant_id);
  ASSERT_EQ(after.size(), 2u);
  // The platform cut run 1 short: no minimum duration. Run 2 ended by itself after 30 s: it pays
  // the minimum billed duration of the price book (60 s).
  EXPECT_EQ(after[0]->billed_seconds, 0);
  EXPECT_EQ(after[1]->billed_seconds, 60);
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);
  ASSERT_TRUE(ctl_.check_invariants());
}

TEST_F(HealingTest, SpotWorkAndNeverPoliciesWaitForTheirNode) {
  add_node("node-b", "h100-80g", 8, "GPU-b");
  auto spot = spec(1);
  spot.pricing = model::PricingModel::kSpot;
  spot.restart_policy = model::default_restart_policy(spot.pricing);
  const auto waiting = launch(alice_, spot);
  run(waiting.id);
  const std::string home = waiting.node_id;
  fail_node(home, {});
  EXPECT_EQ(get(waiting.id).node_id, home);
  EXPECT_EQ(get(waiting.id).state, InstanceState::kRunning);
  EXPECT_EQ(get(waiting.id).run, 1);
  EXPECT_EQ(ctl_.fleet().node_status(**ctl_.fleet().nodes().get(admin_, home)), "down");
  report_desired(home);  // back: it goes on where it was
  EXPECT_EQ(get(waiting.id).state, InstanceState::kRunning);
  EXPECT_EQ(ctl_.fleet().node_status(**ctl_.fleet().nodes().get(admin_, home)), "ready");
}

TEST_F(HealingTest, AGangMovesAsAWholeWithoutSpendingARetry) {
  const auto b = add_node("node-b", "h100-80g", 8, "GPU-b");
  const auto c = add_node("node-c", "h100-80g", 8, "GPU-c");
  model::JobSpec gang;
  gang.task = spec(8);
  gang.nodes = 2;
  const auto job = ctl_.create_job(alice_, gang, std::nullopt, "");
  ASSERT_TRUE(job);
  const auto members = job->job.tasks[0].members;
  std::set<std::string> used;
  for (const auto& id : members) used.insert(get(id).node_id);
  for (const auto& node : used) report_desired(node);
  ASSERT_EQ(get(members[0]).state, InstanceState::kRunning);
  const std::string failed = get(members[1]).node_id;
  const std::string survivor = get(members[0]).node_id;
  std::string spare = node_;
  for (const auto& n : {node_, b, c}) {
    if (!used.contains(n)) spare = n;
  }
  fail_node(failed, {survivor, spare});
  // The failed rank has left its node; the survivor was asked to stop; the task waits for it.
  EXPECT_EQ(get(members[0]).state, InstanceState::kStopping);
  report(survivor, {{members[0], 1, model::WorkloadPhase::kExited, 143, ""}});
  // Both ranks are placed again, on the two healthy nodes, as new runs.
  EXPECT_EQ(get(members[0]).state, InstanceState::kStarting);
  EXPECT_EQ(get(members[1]).state, InstanceState::kStarting);
  EXPECT_NE(get(members[0]).node_id, failed);
  EXPECT_NE(get(members[1]).node_id, failed);
  report_desired(get(members[0]).node_id);
  report_desired(get(members[1]).node_id);
  const auto& task = (*ctl_.jobs().get(alice_, job->job.id))->tasks[0];
  EXPECT_EQ(task.state, model::JobState::kRunning);  // not failed: a move is not an attempt lost
  EXPECT_EQ(ctl_.events().list(alice_, {.kind = "instance.moved"}, 10).size(), 2u);
  ASSERT_TRUE(ctl_.check_invariants());
}

TEST_F(HealingTest, ADrainingNodeSaysSoUntilItsWorkHasLeft) {
  add_node("node-b", "h100-80g", 8, "GPU-b");
  const auto instance = launch(alice_, 2);
  run(instance.id);
  const std::string home = instance.node_id;
  ASSERT_TRUE(ctl_.manage_node(admin_, home, NodeAction::kDrain));
  EXPECT_EQ(ctl_.fleet().node_status(**ctl_.fleet().nodes().get(admin_, home)), "draining");
  report(home, {{instance.id, 1, model::WorkloadPhase::kExited, 143, ""}});
  EXPECT_EQ(ctl_.fleet().node_status(**ctl_.fleet().nodes().get(admin_, home)), "cordoned");
  EXPECT_NE(get(instance.id).node_id, home);
}

}  // namespace
}  // namespace gpurent::controller
