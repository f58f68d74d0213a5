// The billing tick's packed charges (change_set.h) through the store and a restart.
#include "controller/controller_test_fixture.h"

namespace gpurent::controller {
namespace {

class MeteringTest : public StoredControllerTest {
 protected:
  // The node reports everything it was asked to run as running (to `ctl`).
  static void report_running(Controller& ctl, const std::string& node) {
    const auto desired = ctl.desired_state(node);
    model::NodeReport report{desired->generation, {}};
    for (const auto& w : desired->workloads) {
      report.workloads.push_back(
          {w.instance_id, w.run, model::WorkloadPhase::kRunning, std::nullopt, ""});
    }
    ASSERT_TRUE(ctl.apply_report(node, report));
  }
};

std::vector<std::string> ids(const std::vector<model::Transfer>& transfers) {
  std::vector<std::string> out;
  for (const auto& t : transfers) out.push_back(t.id);
  return out;
}

TEST_F(MeteringTest, ATickReplayedAfterARestartPostsNothingTwice) {
  const auto a = launch(alice_, 2);
  const auto b = launch(bob_, 1);
  report_running(ctl_, node_);
  commit(ctl_);

  clock_.advance(Millis(61'000));
  report_running(ctl_, node_);
  ctl_.tick();
  const ChangeSet tick = commit(ctl_);
  ASSERT_EQ(tick.usage_charges.size(), 2u);  // one per run, packed
  EXPECT_TRUE(tick.transfers.empty());
  EXPECT_EQ(ids(tick.all_transfers()),
            (std::vector<std::string>{"usage:" + a.id + ":1:61", "usage:" + b.id + ":1:61"}));
  EXPECT_EQ(tick.metered_usage.size(), 2u);
  // The same batch written again (a retried commit) is refused whole, by the transfer ids.
  EXPECT_FALSE(store_->commit(tick));

  // A restart at the same instant: the restored records were metered up to now, so ticking again
  // charges nothing, and the ledger is what it was.
  const auto second_ptr = restarted(8);
  Controller& second = *second_ptr;
  EXPECT_EQ(second.accounts().ledger_total(), 0);
  EXPECT_EQ(*second.accounts().balance(alice_, alice_.tenant_id), balance(alice_));
  EXPECT_EQ(ids(second.accounts().transfers(alice_.tenant_id)),
            ids(ctl_.accounts().transfers(alice_.tenant_id)));
  report_running(second, node_);
  second.tick();
  const ChangeSet replayed = commit(second);
  EXPECT_TRUE(replayed.usage_charges.empty());
  EXPECT_TRUE(replayed.transfers.empty());

  // The next tick charges the next minute once, with the same transfers as without the restart.
  clock_.advance(Millis(60'000));
  report_running(ctl_, node_);
  report_running(second, node_);
  ctl_.tick();
  second.tick();
  const auto expected = ctl_.take_changes_for_store().all_transfers();
  const ChangeSet next = commit(second);
  EXPECT_EQ(ids(next.all_transfers()),
            (std::vector<std::string>{"usage:" + a.id + ":1:121", "usage:" + b.id + ":1:121"}));
  ASSERT_EQ(next.all_transfers().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(next.all_transfers()[i].amount, expected[i].amount);
  }
  EXPECT_EQ(*second.accounts().balance(alice_, alice_.tenant_id), balance(alice_));

  // What the store holds is what the controller holds.
  const auto again_ptr = restarted(9);
  const Controller& again = *again_ptr;
  EXPECT_EQ(ids(again.accounts().transfers(alice_.tenant_id)),
            ids(ctl_.accounts().transfers(alice_.tenant_id)));
  EXPECT_EQ(*again.accounts().balance(bob_, bob_.tenant_id), balance(bob_));
  const auto usage = again.usage(alice_.tenant_id);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0]->billed_seconds, 121);
  EXPECT_EQ(usage[0]->charged, ctl_.usage(alice_.tenant_id)[0]->charged);
}

// A run's start writes its usage record and not its instance: a restart reads the start back from
// the record, for a run that runs and for one asked to stop before its process came up.
TEST_F(MeteringTest, ARestartReadsARunsStartFromItsUsageRecord) {
  const auto running = launch(alice_, 1);
  const auto stopping = launch(alice_, 1);
  commit(ctl_);
  ASSERT_TRUE(ctl_.stop_instance(alice_, stopping.id));
  commit(ctl_);
  clock_.advance(Millis(5'000));
  const Timestamp started = from_unix_ms(to_unix_ms(clock_.now()));
  report_running(ctl_, node_);
  const ChangeSet start = commit(ctl_);
  EXPECT_TRUE(start.instance_rows.empty());
  EXPECT_EQ(start.usage.size(), 2u);
  EXPECT_EQ(std::set<std::string>(start.changed_instances.begin(), start.changed_instances.end()),
            (std::set<std::string>{running.id, stopping.id}));
  EXPECT_EQ(start.changed_instances.size(), 2u);
  ASSERT_EQ(get(running.id).state, model::InstanceState::kRunning);

  clock_.advance(Millis(1'000));
  const auto back_ptr = restarted(11);
  const Controller& back = *back_ptr;
  const model::Instance& runs = **back.instance(admin_, running.id);
  EXPECT_EQ(runs.state, model::InstanceState::kRunning);
  EXPECT_EQ(runs.started_at, started);
  const model::Instance& stops = **back.instance(admin_, stopping.id);
  EXPECT_EQ(stops.state, model::InstanceState::kStopping);
  EXPECT_EQ(stops.started_at, started);
}

// The tick looks prices up through a memo (billing::RateMemo): a price set and a spot point
// observed between two ticks, each effective in the middle of the next interval, are charged from
// their second on, exactly as a quote of the whole run without the memo prices it.
TEST_F(MeteringTest, TheTickChargesPriceAndSpotChangesMadeBetweenTicks) {
  const auto on_demand = launch(alice_, 2);
  auto spot_spec = spec(1);
  spot_spec.pricing = model::PricingModel::kSpot;
  const auto spot = launch(bob_, spot_spec);
  report_running(ctl_, node_);
  const Timestamp start = clock_.now();
  clock_.advance(Millis(60'000));
  report_running(ctl_, node_);
  ctl_.tick();
  commit(ctl_);

  clock_.advance(Millis(30'500));
  ASSERT_TRUE(ctl_.set_prices(admin_, {.gpu_per_hour = {{"h100-80g", 36'000'000}}}));
  launch(alice_, 4);  // the type fills: the spot price moves at the next tick, from now
  report_running(ctl_, node_);
  ctl_.tick();  // not a billing tick: 30.5 s after the last
  const Timestamp moved = clock_.now();
  ASSERT_EQ(ctl_.pricing().spot_market().span_at("h100-80g", moved).from, moved);
  clock_.advance(Millis(29'500));
  report_running(ctl_, node_);
  ctl_.tick();
  commit(ctl_);

  const auto charged = [&](const Principal& who, const std::string& instance_id) {
    Micros sum = 0;
    for (const auto& t : ctl_.accounts().transfers(who.tenant_id)) {
      if (t.kind == model::TransferKind::kUsage && t.reference == instance_id) sum += t.amount;
    }
    return sum;
  };
  const auto quoted = [&](const model::Instance& instance) {
    model::UsageRecord shape = billing::usage_shape(instance.spec, "h100-80g");
    shape.gpu_milli = instance.gpu_milli;
    Micros sum = 0;
    for (const auto& segment :
         billing::price_interval(ctl_.pricing().rates(), shape, start, clock_.now())) {
      sum += segment.amount;
    }
    return sum;
  };
  EXPECT_EQ(charged(alice_, on_demand.id), quoted(on_demand));
  EXPECT_EQ(charged(bob_, spot.id), quoted(spot));
  // The new price from second 91 of the run (the first that starts after it took effect).
  EXPECT_EQ(charged(alice_, on_demand.id), 2 * (91 * kH100PerSecond + 29 * 2 * kH100PerSecond));
}

}  // namespace
}  // namespace gpurent::controller
