#include "controller/scheduler.h"

#include <gtest/gtest.h>

#include "controller/component_test_fixture.h"

namespace gpurent::controller {
namespace {

using Kind = Scheduler::Decision::Kind;

const model::Principal kOperator{"", "key-op", model::Role::kOperator};

// The Scheduler on its own: one node of two H100s, tenants made in Accounts, instances made by
// hand. Each pass's decisions are applied as the controller would (placing records the instance
// in Placements and takes it out of the queue; asking spot work to leave marks it).
class SchedulerTest : public ComponentTest {
 protected:
  SchedulerTest() {
    alice_ = accounts_.create_tenant(kOperator, "alice")->id;
    bob_ = accounts_.create_tenant(kOperator, "bob")->id;
    model::Node node;
    node.id = "n-1";
    node.state = model::NodeState::kReady;
    nodes_.add(std::move(node));
    add_two_h100s(placements_.cluster(), "n-1");
  }

  model::Instance& queue(const std::string& id, const std::string& tenant,
                         model::PricingModel pricing = model::PricingModel::kOnDemand,
                         int priority = 0) {
    model::Instance& instance = instances_.emplace(id).first->second;
    instance.id = id;
    instance.tenant_id = tenant;
    instance.state = model::InstanceState::kPending;
    instance.spec.gpu_count = 1;
    instance.spec.pricing = pricing;
    instance.spec.priority = priority;
    scheduler_.enqueue(instance);
    return instance;
  }

  // One pass; what it decided, in the order it tried the requests.
  std::vector<std::pair<std::string, Scheduler::Decision>> pass() {
    std::vector<std::pair<std::string, Scheduler::Decision>> decided;
    scheduler_.pass([&](model::Instance& request, Scheduler::Decision decision) {
      decided.emplace_back(request.id, decision);
      if (decision.kind == Kind::kPlace) place(request, decision.assignment.nodes.front());
      for (model::Instance* victim : decision.victims) victim->preempt_requested = true;
    });
    return decided;
  }

  void place(model::Instance& instance, const sched::NodeAssignment& part) {
    scheduler_.dequeue(instance);
    instance.state = model::InstanceState::kRunning;
    instance.node_id = "n-1";
    instance.gpu_type = "h100-80g";
    instance.gpus = {"GPU-" + std::to_string(part.gpus.at(0))};
    placements_.add(instance, part);
  }

  Quotas quotas_{{changes_, accounts_}};
  Placements placements_{sched::Policy::kBinpack, {reservations_}};
  Volumes volumes_{{clock_, rng_, tracker_, idempotency_, accounts_, pricing_, nodes_,
                    [](std::string_view) { return std::vector<std::string>(); }}};
  Metering metering_{{clock_, changes_, tracker_, events_, accounts_, pricing_, nodes_, downtime_,
                      currency_, instances_}};
  JobRegistry jobs_{{clock_, tracker_}};  // none: every request is an instance of its own
  Scheduler scheduler_{{clock_, instances_, jobs_, placements_, nodes_, quotas_, pricing_,
                        reservations_, volumes_, metering_}};
  std::string alice_;
  std::string bob_;
};

TEST_F(SchedulerTest, RequestsAreTriedByClassThenPriorityThenArrival) {
  queue("i-spot", alice_, model::PricingModel::kSpot);
  queue("i-first", alice_);
  queue("i-urgent", alice_, model::PricingModel::kOnDemand, 5);
  queue("i-second", alice_);

  const auto decided = pass();
  ASSERT_EQ(decided.size(), 4u);
  EXPECT_EQ(decided[0].first, "i-urgent");
  EXPECT_EQ(decided[1].first, "i-first");
  EXPECT_EQ(decided[2].first, "i-second");
  EXPECT_EQ(decided[3].first, "i-spot");
  EXPECT_EQ(decided[0].second.kind, Kind::kPlace);
  EXPECT_EQ(decided[1].second.kind, Kind::kPlace);
  // No room left: on-demand work that finds none would ask spot work to leave, and there is none.
  EXPECT_EQ(decided[2].second.kind, Kind::kWait);
  EXPECT_EQ(scheduler_.queue_length(), 2u);
  EXPECT_EQ(scheduler_.requests_tried(), 4u);
  EXPECT_TRUE(placements_.check_invariants(instances_));
}

TEST_F(SchedulerTest, APlaceDecisionIsAllocatedInTheClusterViewWhenHandedOver) {
  queue("i-1", alice_);
  scheduler_.pass([&](model::Instance&, const Scheduler::Decision& decision) {
    ASSERT_EQ(decision.kind, Kind::kPlace);
    const auto& part = decision.assignment.nodes.at(0);
    EXPECT_EQ(placements_.cluster().free_gpu_milli(part.node).at(part.gpus.at(0)), 0);
  });
}

TEST_F(SchedulerTest, WithinABandTheTenantHoldingLeastGoesNext) {
  // Alice holds a GPU already; both tenants queue one request each, Alice's first.
  model::Instance& held = queue("i-held", alice_);
  ASSERT_EQ(pass().size(), 1u);
  ASSERT_EQ(held.state, model::InstanceState::kRunning);
  queue("i-alice", alice_);
  queue("i-bob", bob_);

  const auto decided = pass();
  ASSERT_EQ(decided.size(), 2u);
  EXPECT_EQ(decided[0].first, "i-bob");
  EXPECT_EQ(decided[0].second.kind, Kind::kPlace);
  EXPECT_EQ(decided[1].first, "i-alice");
}

TEST_F(SchedulerTest, AQuotaLeavesTheRequestWaitingAndSaysWhy) {
  ASSERT_TRUE(quotas_.set(kOperator, {.tenant_id = alice_, .max_instances = 1}));
  queue("i-1", alice_);
  queue("i-2", alice_);

  const auto decided = pass();
  ASSERT_EQ(decided.size(), 2u);
  EXPECT_EQ(decided[0].second.kind, Kind::kPlace);
  EXPECT_EQ(decided[1].second.kind, Kind::kWait);
  EXPECT_EQ(decided[1].second.reason, "waiting: the tenant's quota allows 1 instance(s) at once");
}

TEST_F(SchedulerTest, OnDemandWorkAsksSpotWorkToLeaveOnceAndWaitsForIt) {
  queue("i-spot-1", bob_, model::PricingModel::kSpot);
  queue("i-spot-2", bob_, model::PricingModel::kSpot);
  ASSERT_EQ(pass().size(), 2u);  // both placed: the node is full
  queue("i-on-demand", alice_);

  auto decided = pass();
  ASSERT_EQ(decided.size(), 1u);
  ASSERT_EQ(decided[0].second.kind, Kind::kMakeRoom);
  ASSERT_EQ(decided[0].second.victims.size(), 1u);
  model::Instance* victim = decided[0].second.victims[0];
  EXPECT_TRUE(victim->preempt_requested);

  // While the victim leaves, the request asks no one else.
  scheduler_.queue_changed();
  decided = pass();
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].second.kind, Kind::kNone);

  // Gone: its GPU is free, and the request is placed there.
  ASSERT_TRUE(placements_.remove(*victim));
  scheduler_.victim_ended(victim->id);
  scheduler_.queue_changed();
  decided = pass();
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].second.kind, Kind::kPlace);
}

TEST_F(SchedulerTest, APassWithNothingChangedTriesNothingAndAnArrivalAloneIsTriedAlone) {
  queue("i-1", alice_);
  queue("i-2", alice_);
  queue("i-3", alice_);  // no room for it
  ASSERT_EQ(pass().size(), 3u);
  EXPECT_TRUE(pass().empty());
  EXPECT_EQ(scheduler_.requests_tried(), 3u);

  // A pass that places something settles nothing (placing changes what the rest would do); the
  // next full one, which places nothing, settles.
  scheduler_.queue_changed();
  ASSERT_EQ(pass().size(), 1u);
  EXPECT_EQ(scheduler_.requests_tried(), 4u);

  // A later arrival of the same tenant and band: the pass starts where the settled one ended.
  queue("i-4", alice_);
  const auto decided = pass();
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].first, "i-4");
}

}  // namespace
}  // namespace gpurent::controller
