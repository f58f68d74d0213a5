// The controller's pricing: price-book versions mid-run, the minimum duration, stopped disks, the
// spot market and max_price, estimates, and what the store is handed.
#include <gtest/gtest.h>

#include "controller/controller_test_fixture.h"

namespace gpurent::controller {
namespace {

using model::PricingModel;

class PricesTest : public ControllerTest {
 protected:
  Micros charged(const model::Instance& instance) {
    Micros total = 0;
    for (const auto* usage : ctl_.metering().usage(instance.tenant_id)) {
      if (usage->instance_id == instance.id) total += usage->charged;
    }
    return total;
  }
  // A one-GPU instance of the tenant's, running, and the tenant's balance once it runs.
  std::pair<model::Instance, Micros> running(const Principal& tenant) {
    const auto instance = launch(tenant, 1);
    run(instance.id);
    return {instance, balance(tenant)};
  }
};

TEST_F(PricesTest, APriceSetForLaterChargesRunningWorkFromThenOn) {
  const auto [instance, before] = running(alice_);
  auto set = ctl_.set_prices(admin_, {.effective_at = clock_.now() + Millis(60'000),
                                      .gpu_per_hour = {{"h100-80g", 36'000'000}}});
  ASSERT_TRUE(set) << set.error().message;
  EXPECT_EQ(set->version, 2);
  clock_.advance(Millis(120'000));
  run(instance.id);
  ctl_.tick();
  EXPECT_EQ(before - balance(alice_), 60 * kH100PerSecond + 60 * 2 * kH100PerSecond);
  EXPECT_EQ(ctl_.metering().price_per_gpu_hour(get(instance.id)), 36'000'000);
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);
}

TEST_F(PricesTest, OnlyOperatorsSetPricesAndNeverInThePast) {
  EXPECT_EQ(ctl_.set_prices(alice_, {.cpu_per_core_hour = 1}).error().kind,
            ErrorKind::kPermissionDenied);
  EXPECT_EQ(ctl_.set_prices(admin_, {.effective_at = clock_.now() - Millis(1)}).error().code,
            "effective_at_in_past");
  EXPECT_EQ(ctl_.set_prices(admin_, {.gpu_per_hour = {{"mystery-12g", 1}}}).error().code,
            "unknown_gpu_type");
  EXPECT_EQ(ctl_.pricing().book().history().size(), 1u);
}

TEST_F(PricesTest, AShortRunIsChargedTheMinimumButNotWhenItsNodeFails) {
  const auto [instance, before] = running(alice_);
  clock_.advance(Millis(10'000));
  run(instance.id, 0);
  EXPECT_EQ(before - balance(alice_), 60 * kH100PerSecond);
  EXPECT_EQ(charged(instance), 60 * kH100PerSecond);

  // On a node that goes silent, billing ends at its last report, with no minimum.
  const auto [other, bob_before] = running(bob_);
  clock_.advance(Millis(5'000));
  run(other.id);
  clock_.advance(ctl_.options().heartbeat_timeout + Millis(1'000));
  ctl_.tick();
  ASSERT_TRUE(ctl_.stop_instance(bob_, other.id));
  EXPECT_EQ(bob_before - balance(bob_), 5 * kH100PerSecond);
}

TEST_F(PricesTest, ARunItsAgentLostPaysWhatRanAndNoMinimum) {
  // The agent (or its host) restarted a second into the run and no longer lists the workload:
  // the platform cut the run short, so the tenant pays the second it ran, not 60.
  const auto [instance, before] = running(alice_);
  clock_.advance(Millis(1'000));
  report(node_, {});
  ASSERT_EQ(get(instance.id).state, InstanceState::kFailed);
  EXPECT_EQ(before - balance(alice_), 1 * kH100PerSecond);
  EXPECT_EQ(charged(instance), 1 * kH100PerSecond);

  // Gone because it was asked to stop is the tenant's end: the minimum applies.
  const auto [stopped, bob_before] = running(bob_);
  clock_.advance(Millis(1'000));
  ASSERT_TRUE(ctl_.stop_instance(bob_, stopped.id));
  report(node_, {});
  ASSERT_EQ(get(stopped.id).state, InstanceState::kStopped);
  EXPECT_EQ(bob_before - balance(bob_), 60 * kH100PerSecond);
}

TEST_F(PricesTest, ARunWhoseCommandNeverStartedPaysNothing) {
  // A typo in the command: the agent could not execute it. Nothing ran, so no minimum is due.
  const auto instance = launch(alice_, spec(1));
  const Micros before = balance(alice_);
  clock_.advance(Millis(1'500));
  report(get(instance.id).node_id,
         {{instance.id, get(instance.id).run, model::WorkloadPhase::kExited, 127,
           "cannot execute './task.sh': No such file or directory", /*never_started=*/true}});
  const auto& failed = get(instance.id);
  ASSERT_EQ(failed.state, InstanceState::kFailed);
  EXPECT_EQ(failed.reason,
            "the command could not be started: cannot execute './task.sh': No such file or "
            "directory");
  EXPECT_EQ(before - balance(alice_), 0);
  EXPECT_EQ(charged(failed), 0);

  // The same exit from a command that ran (a script's own 127) pays the minimum.
  const auto ran = launch(bob_, spec(1));
  const Micros bob_before = balance(bob_);
  report(get(ran.id).node_id,
         {{ran.id, get(ran.id).run, model::WorkloadPhase::kExited, 127, "", false}});
  EXPECT_EQ(bob_before - balance(bob_), 60 * kH100PerSecond);
}

TEST_F(PricesTest, AStoppedInstancesDiskPaysStorageUntilItStartsAgain) {
  auto s = spec(1);
  s.disk_gb = 720;  // 0.5 a GB-month: 360 a month, 0.5 an hour
  const auto instance = launch(alice_, s);
  run(instance.id);
  clock_.advance(Millis(60'000));
  ASSERT_TRUE(ctl_.stop_instance(alice_, instance.id));
  run(instance.id, 143);
  ASSERT_EQ(get(instance.id).state, InstanceState::kStopped);
  const Micros before = balance(alice_);
  clock_.advance(std::chrono::hours(2));
  ctl_.tick();
  EXPECT_EQ(before - balance(alice_), 1'000'000);
  clock_.advance(std::chrono::hours(1));
  ASSERT_TRUE(ctl_.start_instance(alice_, instance.id));  // meters up to now and closes it
  EXPECT_EQ(before - balance(alice_), 1'500'000);
  clock_.advance(std::chrono::hours(1));
  ctl_.tick();
  EXPECT_EQ(before - balance(alice_), 1'500'000 + 0);  // placed again: no storage while it runs
  bool found = false;
  for (const auto* usage : ctl_.metering().usage(alice_.tenant_id)) {
    if (usage->kind != model::UsageKind::kStoppedDisk) continue;
    found = true;
    EXPECT_EQ(usage->id, instance.id + "/1/disk");
    EXPECT_EQ(usage->billed_seconds, 3 * 3600);
    EXPECT_TRUE(usage->ended_at);
  }
  EXPECT_TRUE(found);
}

TEST_F(PricesTest, SpotPriceRisesWithUtilisationAndInterruptsAboveMaxPrice) {
  auto cheap = spec(1);
  cheap.pricing = PricingModel::kSpot;
  cheap.max_price = 8'000'000;  // above the floor (7.2), below a busy type's price
  const auto spot = launch(alice_, cheap);
  run(spot.id);
  ctl_.tick();  // 1 of 8 GPUs held: 7.2 + 10.8 x (1/8)^2 = 7.36875
  EXPECT_EQ(ctl_.pricing().spot_market().price_at(ctl_.pricing().book(), "h100-80g", clock_.now()),
            7'368'750);
  EXPECT_EQ(get(spot.id).state, InstanceState::kRunning);

  const auto busy = launch(bob_, 4);  // 5 of 8 held: 7.2 + 10.8 x 0.390625 = 11.41875
  run(busy.id);
  clock_.advance(Millis(1'000));
  ctl_.tick();
  EXPECT_EQ(ctl_.pricing().spot_market().price_at(ctl_.pricing().book(), "h100-80g", clock_.now()),
            11'418'750);
  const auto& interrupted = get(spot.id);
  EXPECT_EQ(interrupted.state, InstanceState::kStopping);
  EXPECT_NE(interrupted.reason.find("rose above its max_price"), std::string::npos);
  const auto events = ctl_.events().list(alice_, {.object_id = interrupted.id}, 10);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]->kind, model::event_kind::kInstancePreempted);
  EXPECT_EQ(events[0]->message, interrupted.reason);
  run(spot.id, 143);
  EXPECT_EQ(get(spot.id).state, InstanceState::kPreempted);

  // Launched again while the price is above its max_price, it waits.
  ASSERT_TRUE(ctl_.start_instance(alice_, spot.id));
  EXPECT_EQ(get(spot.id).state, InstanceState::kPending);
  EXPECT_NE(get(spot.id).reason.find("above its max_price"), std::string::npos);

  // The busy work ends; the price falls at the next tick, which places it.
  ASSERT_TRUE(ctl_.stop_instance(bob_, busy.id));
  run(busy.id, 143);
  EXPECT_EQ(get(spot.id).state, InstanceState::kPending);
  clock_.advance(Millis(1'000));
  ctl_.tick();
  EXPECT_EQ(get(spot.id).state, InstanceState::kStarting);
}

TEST_F(PricesTest, SpotWorkAboveItsMaxPriceIsPlacedWhenALowerPriceComesIntoForce) {
  const auto busy = launch(bob_, 6);
  run(busy.id);
  ctl_.tick();  // 6 of 8 held: 7.2 + 10.8 x (6/8)^2 = 13.275
  auto capped = spec(1);
  capped.pricing = PricingModel::kSpot;
  capped.max_price = 8'000'000;
  const auto spot = launch(alice_, capped);
  EXPECT_EQ(get(spot.id).state, InstanceState::kPending);
  // Half the price from a second on: 3.6 + 5.4 x (6/8)^2 = 6.6375. Nothing else changes.
  ASSERT_TRUE(ctl_.set_prices(admin_, {.effective_at = clock_.now() + Millis(1'000),
                                       .gpu_per_hour = {{"h100-80g", 9'000'000}}}));
  ctl_.tick();
  EXPECT_EQ(get(spot.id).state, InstanceState::kPending);
  clock_.advance(Millis(1'000));
  ctl_.tick();
  EXPECT_EQ(ctl_.pricing().spot_market().price_at(ctl_.pricing().book(), "h100-80g", clock_.now()),
            6'637'500);
  EXPECT_EQ(get(spot.id).state, InstanceState::kStarting);
}

TEST_F(PricesTest, EstimatePricesTheMostExpensiveAcceptableType) {
  auto s = spec(2);
  s.gpu_types = {"h100-80g", "a100-80g"};
  s.cpu = 4;
  ASSERT_TRUE(ctl_.set_prices(admin_, {.cpu_per_core_hour = 100'000}));
  const auto e = ctl_.pricing().estimate(s);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->gpu_type, "h100-80g");
  EXPECT_EQ(e->total_per_hour, 36'000'000 + 400'000);
  s.gpu_types = {"mystery-12g"};
  EXPECT_EQ(ctl_.pricing().estimate(s).error().code, "unknown_gpu_type");
}

TEST_F(PricesTest, VersionsAndSpotPointsAreHandedToTheStoreAndRestored) {
  ctl_.take_changes();
  ASSERT_TRUE(ctl_.set_prices(admin_, {.effective_at = clock_.now() + Millis(1'000),
                                       .gpu_per_hour = {{"h100-80g", 20'000'000}}}));
  const auto instance = launch(alice_, 2);
  run(instance.id);
  ctl_.tick();
  auto changes = ctl_.take_changes();
  ASSERT_EQ(changes.price_versions.size(), 2u);  // version 1 as it was, then 2
  EXPECT_EQ(changes.price_versions[0].version, 1);
  ASSERT_EQ(changes.spot_prices.size(), 1u);
  EXPECT_EQ(changes.spot_prices[0].utilisation_permille, 250);

  Controller restored(clock_, {.seed = 9});
  Snapshot snapshot;
  snapshot.price_versions = changes.price_versions;
  snapshot.spot_prices = changes.spot_prices;
  ASSERT_TRUE(restored.restore(std::move(snapshot)));
  EXPECT_EQ(restored.pricing().book().on_demand_price("h100-80g", clock_.now() + Millis(1'000)),
            20'000'000);
  EXPECT_EQ(restored.pricing().spot_market().utilisation_at("h100-80g", clock_.now()), 250);
}

}  // namespace
}  // namespace gpurent::controller
