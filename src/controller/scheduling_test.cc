// The controller's scheduling rules: queue order, preemption, fail-fast, cordon and drain, GPU
// shares, type lists and runtime limits.
#include <gtest/gtest.h>

#include "controller/controller_test_fixture.h"

namespace gpurent::controller {
namespace {

using model::PricingModel;

class SchedulingTest : public ControllerTest {
 protected:
  model::InstanceSpec with(int gpus, PricingModel pricing, int priority = 0) {
    auto s = spec(gpus);
    s.pricing = pricing;
    s.priority = priority;
    return s;
  }
  // Two more 8-GPU nodes beside the first, then two 8-GPU instances of `pricing` running on two
  // of the three.
  std::pair<model::Instance, model::Instance> three_nodes_two_busy(PricingModel pricing) {
    add_node("node-b", "h100-80g", 8, "GPU-b");
    add_node("node-c", "h100-80g", 8, "GPU-c");
    const auto first = launch(alice_, with(8, pricing));
    const auto second = launch(alice_, with(8, pricing));
    run(first.id);
    run(second.id);
    return {first, second};
  }
};

TEST_F(SchedulingTest, ClassesThenTenantPriorityThenFirstComeFirstServed) {
  // First come first served is at millisecond resolution: the clock moves between arrivals.
  const auto next = [&](const Principal& who, model::InstanceSpec s) {
    clock_.advance(Millis(1));
    return launch(who, std::move(s));
  };
  const auto big = launch(alice_, 8);
  const auto spot = next(alice_, with(4, PricingModel::kSpot));
  const auto first = next(bob_, with(4, PricingModel::kOnDemand));
  const auto urgent = next(alice_, with(4, PricingModel::kOnDemand, 5));
  const auto second = next(bob_, with(4, PricingModel::kOnDemand));
  for (const auto* queued : {&spot, &first, &urgent, &second}) {
    EXPECT_EQ(queued->state, InstanceState::kPending);
  }
  run(big.id);
  ASSERT_TRUE(ctl_.stop_instance(alice_, big.id));
  run(big.id, 143);
  // Eight GPUs came free: the prioritised on-demand request, then the older on-demand one.
  EXPECT_EQ(get(urgent.id).state, InstanceState::kStarting);
  EXPECT_EQ(get(first.id).state, InstanceState::kStarting);
  EXPECT_EQ(get(second.id).state, InstanceState::kPending);
  EXPECT_EQ(get(spot.id).state, InstanceState::kPending);
}

TEST_F(SchedulingTest, OnDemandPreemptsTheFewestMostRecentSpotInstances) {
  const auto old_spot = launch(alice_, with(4, PricingModel::kSpot));
  run(old_spot.id);
  clock_.advance(Millis(5'000));
  const auto new_spot = launch(alice_, with(2, PricingModel::kSpot));
  run(new_spot.id);
  clock_.advance(Millis(5'000));
  const auto small_spot = launch(alice_, with(2, PricingModel::kSpot));
  run(small_spot.id);
  // Two GPUs are wanted: one victim is enough; of the 2-GPU ones the most recently started.
  const auto on_demand = launch(bob_, with(2, PricingModel::kOnDemand));
  EXPECT_EQ(on_demand.state, InstanceState::kPending);
  EXPECT_EQ(get(small_spot.id).state, InstanceState::kStopping);
  EXPECT_EQ(get(new_spot.id).state, InstanceState::kRunning);
  EXPECT_EQ(get(old_spot.id).state, InstanceState::kRunning);
  // Ticks while the victim shuts down ask no one else to leave.
  ctl_.tick();
  EXPECT_EQ(get(new_spot.id).state, InstanceState::kRunning);
  run(small_spot.id, 143);
  EXPECT_EQ(get(small_spot.id).state, InstanceState::kPreempted);
  EXPECT_EQ(get(on_demand.id).state, InstanceState::kStarting);
  // A preempted instance can be started again; it queues behind on-demand work.
  ASSERT_TRUE(ctl_.start_instance(alice_, small_spot.id));
  EXPECT_EQ(get(small_spot.id).state, InstanceState::kPending);
  // Spot work never preempts.
  const auto another = launch(bob_, with(2, PricingModel::kSpot));
  EXPECT_EQ(get(another.id).state, InstanceState::kPending);
  EXPECT_EQ(get(new_spot.id).state, InstanceState::kRunning);
}

// make_room remembers where room could and could not be made (scheduler.h, RoomKnown): what it
// remembered must give way to what changed since.
class RoomMakingTest : public SchedulingTest {
 protected:
  // The node: two on-demand instances of 3 GPUs (the first is `held_`), then two one-GPU spot
  // instances, spot_b_ the most recently started.
  RoomMakingTest() {
    held_ = launch(alice_, with(3, PricingModel::kOnDemand)).id;
    run(held_);
    run(launch(alice_, with(3, PricingModel::kOnDemand)).id);
    spot_a_ = launch(alice_, with(1, PricingModel::kSpot)).id;
    run(spot_a_);
    clock_.advance(Millis(1'000));
    spot_b_ = launch(alice_, with(1, PricingModel::kSpot)).id;
    run(spot_b_);
  }
  std::string held_, spot_a_, spot_b_;
};

TEST_F(RoomMakingTest, EachWaitingRequestMakesItsOwnRoom) {
  // The first asks the most recently started spot instance to leave; the second, finding that
  // one leaving already, the other.
  const auto first = launch(bob_, with(1, PricingModel::kOnDemand));
  EXPECT_EQ(get(spot_b_).state, InstanceState::kStopping);
  EXPECT_EQ(get(spot_a_).state, InstanceState::kRunning);
  const auto second = launch(bob_, with(1, PricingModel::kOnDemand));
  EXPECT_EQ(get(spot_a_).state, InstanceState::kStopping);
  run(spot_b_, 143);
  EXPECT_EQ(get(first.id).gpus.size(), 1u);  // placed when its victim was gone
  EXPECT_EQ(get(second.id).state, InstanceState::kPending);
  run(spot_a_, 143);
  EXPECT_EQ(get(second.id).gpus.size(), 1u);
}

TEST_F(RoomMakingTest, RoomThatCouldNotBeMadeIsMadeOnceOtherWorkEnds) {
  // Four GPUs wanted; all the spot work gives up only two.
  const auto big = launch(bob_, with(4, PricingModel::kOnDemand));
  ctl_.tick();
  EXPECT_EQ(get(big.id).state, InstanceState::kPending);
  EXPECT_EQ(get(spot_a_).state, InstanceState::kRunning);
  EXPECT_EQ(get(spot_b_).state, InstanceState::kRunning);
  // Three GPUs come free: one spot instance is enough now.
  ASSERT_TRUE(ctl_.stop_instance(alice_, held_));
  run(held_, 143);
  EXPECT_EQ(get(spot_b_).state, InstanceState::kStopping);
  EXPECT_EQ(get(spot_a_).state, InstanceState::kRunning);
  run(spot_b_, 143);
  EXPECT_EQ(get(big.id).state, InstanceState::kStarting);
}

TEST_F(SchedulingTest, AnOnDemandGangPreemptsSpotWorkOnAsFewNodesAsItNeeds) {
  const auto [first_spot, second_spot] = three_nodes_two_busy(PricingModel::kSpot);
  // Two nodes of 8 GPUs: the free node and one victim's (of equal victims, the lower node id).
  model::JobSpec gang;
  gang.task = spec(8);
  gang.nodes = 2;
  auto job = ctl_.create_job(bob_, gang, std::nullopt, "");
  ASSERT_TRUE(job) << job.error().message;
  const auto& members = job->job.tasks.at(0).members;
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(get(members[0]).state, InstanceState::kPending);
  EXPECT_EQ(get(members[1]).state, InstanceState::kPending);
  const auto& victim =
      get(first_spot.id).node_id < get(second_spot.id).node_id ? first_spot : second_spot;
  const auto& spared = victim.id == first_spot.id ? second_spot : first_spot;
  EXPECT_EQ(get(victim.id).state, InstanceState::kStopping);
  EXPECT_EQ(get(spared.id).state, InstanceState::kRunning);
  ctl_.tick();
  EXPECT_EQ(get(spared.id).state, InstanceState::kRunning);
  run(victim.id, 143);
  EXPECT_EQ(get(victim.id).state, InstanceState::kPreempted);
  EXPECT_EQ(get(members[0]).state, InstanceState::kStarting);
  EXPECT_EQ(get(members[1]).state, InstanceState::kStarting);
  EXPECT_NE(get(members[0]).node_id, get(members[1]).node_id);
  EXPECT_EQ(get(spared.id).state, InstanceState::kRunning);
  EXPECT_TRUE(ctl_.check_invariants());
}

TEST_F(SchedulingTest, AGangAsksSpotWorkToLeaveOnlyOnceEnoughNodesCouldTakeItsMembers) {
  const auto [kept, ending] = three_nodes_two_busy(PricingModel::kOnDemand);
  // One node is free: too few for a gang of two, which waits.
  auto job = ctl_.create_job(bob_, {.task = with(8, PricingModel::kOnDemand), .nodes = 2},
                             std::nullopt, "");
  ASSERT_TRUE(job) << job.error().message;
  const auto members = job->job.tasks.at(0).members;
  ASSERT_EQ(members.size(), 2u);
  // Spot work takes the free node. Giving it up would make room for one member only: it stays.
  const auto spot = launch(alice_, with(8, PricingModel::kSpot));
  run(spot.id);
  ctl_.tick();
  EXPECT_EQ(get(spot.id).state, InstanceState::kRunning);
  EXPECT_EQ(get(members[0]).state, InstanceState::kPending);
  // A second node comes free: with the spot node the gang has two, and the spot work is asked
  // to leave.
  ASSERT_TRUE(ctl_.stop_instance(alice_, ending.id));
  run(ending.id, 143);
  EXPECT_EQ(get(spot.id).state, InstanceState::kStopping);
  run(spot.id, 143);
  EXPECT_EQ(get(members[0]).state, InstanceState::kStarting);
  EXPECT_EQ(get(members[1]).state, InstanceState::kStarting);
  EXPECT_EQ(get(kept.id).state, InstanceState::kRunning);
  EXPECT_TRUE(ctl_.check_invariants());
}

TEST_F(SchedulingTest, SpotWorkIsBilledAtTheSpotPrice) {
  const auto spot = launch(alice_, with(1, PricingModel::kSpot));
  const Micros before = balance(alice_);
  run(spot.id);
  clock_.advance(Millis(100'000));
  run(spot.id);
  ctl_.tick();
  // The market saw the type first at this tick: before it, the type counts as idle (the floor).
  EXPECT_EQ(before - balance(alice_), 100 * kH100PerSecond * 40 / 100);
}

TEST_F(SchedulingTest, WorkNoNodeCouldEverHoldIsRefusedUnlessItWaitsForCapacity) {
  // One 8-GPU H100 node and one 4-GPU L40S node: eight L40S, A100s, or a gang of eight H100s
  // on two nodes would wait forever.
  add_node("node-l", "l40s-48g", 4, "GPU-l");
  auto l40s = spec(8);
  l40s.gpu_types = {"l40s-48g"};
  const auto refused = ctl_.create_instance(alice_, l40s, std::nullopt, "");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "never_fits");
  EXPECT_NE(refused.error().message.find("(gpu_count rule): 8 GPUs of l40s-48g on one node: the "
                                         "largest node has 4"),
            std::string::npos)
      << refused.error().message;
  auto a100 = spec(1);
  a100.gpu_types = {"a100-80g"};
  const auto no_type = ctl_.create_instance(alice_, a100, std::nullopt, "");
  ASSERT_FALSE(no_type);
  EXPECT_NE(no_type.error().message.find("no node has GPUs of a100-80g"), std::string::npos)
      << no_type.error().message;
  model::JobSpec gang{.task = spec(8), .nodes = 2};
  const auto gang_refused = ctl_.create_job(alice_, gang, std::nullopt, "");
  ASSERT_FALSE(gang_refused);
  EXPECT_EQ(gang_refused.error().code, "never_fits");
  EXPECT_NE(gang_refused.error().message.find("a gang of 2 needs 2 nodes"), std::string::npos)
      << gang_refused.error().message;
  EXPECT_TRUE(ctl_.jobs().list(alice_, {}, "", 100)->items.empty());
  // Asked to wait for capacity, the gang waits, saying for what, and starts once a node joins.
  gang.task.wait_for_capacity = true;
  const auto waiting = ctl_.create_job(alice_, gang, std::nullopt, "");
  ASSERT_TRUE(waiting) << waiting.error().message;
  const std::string member = waiting->job.tasks[0].members[0];
  EXPECT_TRUE(get(member).reason.starts_with("waiting for a node that can hold it to join"))
      << get(member).reason;
  add_node("node-b", "h100-80g", 8, "GPU-b");
  ctl_.tick();
  EXPECT_EQ(get(member).state, InstanceState::kStarting);
  // Busy nodes still count: eight GPUs are admitted to wait for the gang's.
  EXPECT_EQ(launch(bob_, 8).state, InstanceState::kPending);
}

TEST_F(SchedulingTest, AJobWithoutQueueingIsRefusedUnlessItsFirstTaskStartsNow) {
  launch(bob_, 6);
  model::JobSpec job{.task = spec(4), .array = 3};
  job.task.queue = false;
  const auto refused = ctl_.create_job(alice_, job, std::nullopt, "");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "insufficient_capacity");
  EXPECT_TRUE(ctl_.jobs().list(alice_, {}, "", 100)->items.empty());
  job.task.gpu_count = 2;
  const auto created = ctl_.create_job(alice_, job, std::nullopt, "");
  ASSERT_TRUE(created) << created.error().message;
  // The first task started; the later ones wait for room as usual.
  EXPECT_EQ(get(created->job.tasks[0].members[0]).state, InstanceState::kStarting);
  EXPECT_EQ(get(created->job.tasks[1].members[0]).state, InstanceState::kPending);
}

TEST_F(SchedulingTest, QueueFalseFailsFastWithTheReasonAndCreatesNothing) {
  launch(alice_, 6);
  auto s = spec(4);
  s.queue = false;
  const auto refused = ctl_.create_instance(bob_, s, std::nullopt, "");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "insufficient_capacity");
  EXPECT_NE(refused.error().message.find("gpu_count"), std::string::npos);
  EXPECT_NE(refused.error().message.find("free GPUs of the requested type(s): 2"),
            std::string::npos)
      << refused.error().message;
  EXPECT_TRUE(ctl_.instances().list(bob_, {}, "", 100)->items.empty());
  s.gpu_count = 2;
  EXPECT_EQ(launch(bob_, s).state, InstanceState::kStarting);
}

TEST_F(SchedulingTest, CordonKeepsNewWorkAwayAndDrainMovesWorkElsewhere) {
  const auto other = add_node("node-b", "h100-80g", 8, "GPU-b");
  ASSERT_TRUE(ctl_.manage_node(admin_, node_, NodeAction::kCordon));
  EXPECT_EQ(ctl_.manage_node(alice_, node_, NodeAction::kUncordon).error().kind,
            ErrorKind::kPermissionDenied);
  const auto first = launch(alice_, 2);
  EXPECT_EQ(first.node_id, other);
  run(first.id);
  ASSERT_TRUE(ctl_.manage_node(admin_, node_, NodeAction::kUncordon));
  EXPECT_EQ(*ctl_.manage_node(admin_, other, NodeAction::kDrain), 1);
  EXPECT_EQ(get(first.id).state, InstanceState::kStopping);
  run(first.id, 143);
  // Its process is gone from the drained node: placed again, on the other node, in a new run.
  EXPECT_EQ(get(first.id).state, InstanceState::kStarting);
  EXPECT_EQ(get(first.id).node_id, node_);
  EXPECT_EQ(get(first.id).run, 2);
  EXPECT_EQ(launch(bob_, 8).state, InstanceState::kPending);  // node-b stays cordoned
  EXPECT_EQ(ctl_.manage_node(admin_, "n-unknown", NodeAction::kDrain).error().kind,
            ErrorKind::kNotFound);
}

TEST_F(SchedulingTest, GpuSharesPackOntoOneGpuAndAreBilledByShare) {
  auto half = spec(1);
  half.gpu_milli = 500;
  const auto a = launch(alice_, half);
  const auto b = launch(bob_, half);
  EXPECT_EQ(a.gpus, b.gpus);
  EXPECT_EQ(ctl_.fleet().placements().holders(a.gpus.at(0)).size(), 2u);
  const Micros before = balance(alice_);
  run(a.id);
  clock_.advance(Millis(60'000));
  run(a.id);
  ctl_.tick();
  EXPECT_EQ(before - balance(alice_), 60 * kH100PerSecond / 2);
}

TEST_F(SchedulingTest, GpuSharesRunAsMpsClientsLimitedToTheirShare) {
  auto quarter = spec(1);
  quarter.gpu_milli = 250;
  auto with_memory = quarter;
  with_memory.gpu_milli = 330;
  with_memory.gpu_memory_gb = 10;
  const auto a = launch(alice_, quarter);
  const auto b = launch(bob_, with_memory);
  const auto whole = launch(bob_, spec(1));
  const auto desired = ctl_.fleet().desired_state(node_);
  ASSERT_TRUE(desired);
  std::map<std::string, std::map<std::string, std::string>> env;
  for (const auto& workload : desired->workloads) env[workload.instance_id] = workload.env;
  EXPECT_EQ(env.at(a.id).at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
  EXPECT_EQ(env.at(a.id).at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=20480M");  // 80 GiB / 4
  EXPECT_EQ(env.at(b.id).at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "33");
  EXPECT_EQ(env.at(b.id).at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=10240M");  // as asked
  EXPECT_FALSE(env.at(whole.id).contains("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
}

TEST_F(SchedulingTest, TypeListsAndAnyTypeAreBilledAtTheTypeTheyGot) {
  add_node("node-b", "a100-80g", 2, "GPU-b");
  auto any = spec(2);
  any.gpu_types = {};
  any.min_gpu_memory_gb = 80;
  auto either = spec(2);
  either.gpu_types = {"a100-80g", "h100-80g"};
  const auto first = launch(alice_, either);
  EXPECT_EQ(first.gpu_type, "a100-80g");  // the fuller node: best fit
  const auto second = launch(alice_, any);
  EXPECT_EQ(second.gpu_type, "h100-80g");
  const auto price = ctl_.metering().price_per_gpu_hour(get(first.id));
  EXPECT_EQ(price, ctl_.pricing().book().on_demand_price("a100-80g", clock_.now()));
  auto too_big = spec(1);
  too_big.gpu_types = {};
  too_big.min_gpu_memory_gb = 200;
  EXPECT_EQ(ctl_.create_instance(alice_, too_big, std::nullopt, "").error().code,
            "gpu_type_not_priced");
}

TEST_F(SchedulingTest, DeclaredMaxRuntimeStopsTheInstance) {
  auto limited = spec(1);
  limited.max_runtime_s = 30;
  const auto instance = launch(alice_, limited);
  run(instance.id);
  for (int second = 1; second < 30; ++second) {
    clock_.advance(Millis(1'000));
    run(instance.id);  // the node stays in touch
    ctl_.tick();
  }
  EXPECT_EQ(get(instance.id).state, InstanceState::kRunning);
  clock_.advance(Millis(1'000));
  run(instance.id);
  ctl_.tick();
  EXPECT_EQ(get(instance.id).state, InstanceState::kStopping);
  EXPECT_NE(get(instance.id).reason.find("max_runtime_s"), std::string::npos);
}

TEST_F(SchedulingTest, QueueingBehindWorkThatDoesNotFitCostsTheSameForAnyQueueLength) {
  // One GPU is taken, so no 8-GPU request fits: the API benchmark's queued creations.
  run(launch(alice_, 1).id);
  const auto tried_per_launch = [&](int queued) {
    model::JobSpec array;
    array.task = spec(8);
    array.array = queued;
    EXPECT_TRUE(ctl_.create_job(alice_, std::move(array), std::nullopt, ""));
    constexpr int kLaunches = 10;
    const uint64_t before = ctl_.fleet().platform_stats().scheduling_requests_tried;
    for (int i = 0; i < kLaunches; ++i) EXPECT_EQ(launch(alice_, 8).state, InstanceState::kPending);
    return (ctl_.fleet().platform_stats().scheduling_requests_tried - before) / kLaunches;
  };
  const uint64_t short_queue = tried_per_launch(100);
  const uint64_t long_queue = tried_per_launch(10'000);
  EXPECT_EQ(long_queue, short_queue);
  EXPECT_EQ(short_queue, 1u);  // the new request alone
}

TEST_F(SchedulingTest, ATickRetriesNoQueueThatTimeAloneCannotMove) {
  run(launch(alice_, 8).id);  // the node is full
  for (int i = 0; i < 3; ++i) EXPECT_EQ(launch(bob_, 1).state, InstanceState::kPending);
  const auto tried = [&] { return ctl_.fleet().platform_stats().scheduling_requests_tried; };
  const uint64_t before = tried();
  clock_.advance(Millis(1'000));
  ctl_.tick();
  EXPECT_EQ(tried(), before);
  // Spot work with a max_price is admitted by the price now, which the next tick may move.
  auto capped = with(1, PricingModel::kSpot);
  capped.max_price = 100'000'000;
  EXPECT_EQ(launch(bob_, capped).state, InstanceState::kPending);
  const uint64_t with_capped = tried();
  ASSERT_TRUE(ctl_.set_prices(admin_, {.effective_at = clock_.now() + Millis(1'000),
                                       .gpu_per_hour = {{"h100-80g", 9'000'000}}}));
  ctl_.tick();
  EXPECT_GT(tried(), with_capped);  // set_prices asked for a pass
  const uint64_t after_set = tried();
  ctl_.tick();
  EXPECT_EQ(tried(), after_set);
  clock_.advance(Millis(1'000));
  ctl_.tick();  // the new price is in force
  EXPECT_GT(tried(), after_set);
}

TEST_F(SchedulingTest, NodesWithMixedGpuTypesAreRefused) {
  model::NodeRegistration mixed{.name = "mixed", .cpu_count = 8, .memory_mb = 1024};
  mixed.gpus = {{"GPU-m0", 0, "h100-80g", "H100", 81920}, {"GPU-m1", 1, "a100-80g", "A100", 81920}};
  EXPECT_EQ(ctl_.register_node(hash_secret("join"), mixed, "c", hash_secret("c")).error().code,
            "mixed_gpu_types");
}

TEST_F(SchedulingTest, ANodeAddressMustBeAHostNameOrIpAddress) {
  model::NodeRegistration node{.name = "addr", .cpu_count = 8, .memory_mb = 1024};
  node.gpus = {{"GPU-addr0", 0, "h100-80g", "H100", 81920}};
  for (const std::string& bad :
       std::vector<std::string>{"10.0.0.1; reboot", "$(id)", "a b", std::string(254, 'a')}) {
    node.address = bad;
    EXPECT_EQ(ctl_.register_node(hash_secret("join"), node, "c", hash_secret("c")).error().code,
              "invalid_field")
        << bad;
  }
  node.address = "10.0.0.7";
  ASSERT_TRUE(ctl_.register_node(hash_secret("join"), node, "c", hash_secret("c")));
}

}  // namespace
}  // namespace gpurent::controller
