// The billing tick's packed charges (change_set.h) through the store and a restart.
#include "controller/component_test_fixture.h"
#include "controller/controller_test_fixture.h"

namespace gpurent::controller {
namespace {

class MeteringTest : public StoredControllerTest {
 protected:
  // The node reports everything it was asked to run as running (to `ctl`).
  static void report_running(Controller& ctl, const std::string& node) {
    const auto desired = ctl.fleet().desired_state(node);
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
  const auto expected = ctl_.take_changes(Controller::Form::kStoreRows).all_transfers();
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
  const auto usage = again.metering().usage(alice_.tenant_id);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0]->billed_seconds, 121);
  EXPECT_EQ(usage[0]->charged, ctl_.metering().usage(alice_.tenant_id)[0]->charged);
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
  const model::Instance& runs = **back.instances().get(admin_, running.id);
  EXPECT_EQ(runs.state, model::InstanceState::kRunning);
  EXPECT_EQ(runs.started_at, started);
  const model::Instance& stops = **back.instances().get(admin_, stopping.id);
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

// Metering on its own, without a Controller: one node, one tenant, instances made by hand.
class MeteringComponentTest : public ComponentTest {
 protected:
  MeteringComponentTest() {
    const model::Principal op{"", "key-op", model::Role::kOperator};
    billing::PriceChange change;
    change.minimum_billed_seconds = 60;
    EXPECT_TRUE(pricing_.set(op, change, [](std::string_view) { return true; }));
    tenant_ = accounts_.create_tenant(op, "alice")->id;
    model::Node node;
    node.id = "n-1";
    node.state = model::NodeState::kReady;
    node.last_heartbeat = clock_.now();
    node_ = &nodes_.add(std::move(node));
  }

  // A running instance of one H100 (18 CNY, 5,000 micros a second) on n-1, in its first run.
  model::Instance& running(const std::string& id) {
    model::Instance& instance = instances_.emplace(id).first->second;
    instance.id = id;
    instance.tenant_id = tenant_;
    instance.node_id = "n-1";
    instance.gpu_type = "h100-80g";
    instance.gpus = {"GPU-0"};
    instance.run = 1;
    instance.state = model::InstanceState::kRunning;
    return instance;
  }

  Micros charged(const model::Instance& instance) const {
    return metering_.current(instance)->charged;
  }

  Metering metering_{{clock_, changes_, tracker_, events_, accounts_, pricing_, nodes_, downtime_,
                      currency_, instances_}};
  std::string tenant_;
  model::Node* node_ = nullptr;
};

TEST_F(MeteringComponentTest, ARunEndedByItsTenantPaysTheMinimumAndOneCutShortPaysItsSeconds) {
  model::Instance& stopped = running("i-1");
  model::Instance& failed_under = running("i-2");
  metering_.open_run(stopped, clock_.now());
  metering_.open_run(failed_under, clock_.now());
  EXPECT_EQ(metering_.price_per_gpu_hour(stopped), 18'000'000);
  clock_.advance(Millis(10'000));

  metering_.close_run(stopped, clock_.now(), /*cut_short=*/false);
  metering_.close_run(failed_under, clock_.now(), /*cut_short=*/true);
  EXPECT_EQ(charged(stopped), 60 * 5'000);
  EXPECT_EQ(charged(failed_under), 10 * 5'000);
  EXPECT_EQ(metering_.current(stopped)->ended_at, clock_.now());

  // A closed run is not metered again, nor closed twice.
  clock_.advance(Millis(30'000));
  metering_.meter(stopped, clock_.now());
  metering_.close_run(stopped, clock_.now(), false);
  EXPECT_EQ(charged(stopped), 60 * 5'000);
  EXPECT_EQ(*accounts_.balance(model::platform_principal(), tenant_), -70 * 5'000);
}

TEST_F(MeteringComponentTest, TheTickMetersUpToTheNodesLastReportAndSkipsItsSilence) {
  model::Instance& instance = running("i-1");
  metering_.open_run(instance, clock_.now());
  clock_.advance(Millis(5'000));
  node_->last_heartbeat = clock_.now();
  clock_.advance(Millis(15'000));
  metering_.meter_all(clock_.now());
  EXPECT_EQ(charged(instance), 5 * 5'000);

  // The node was unreachable until now and reports again: the silence is not billed.
  metering_.skip_silence(instance, clock_.now());
  clock_.advance(Millis(3'000));
  node_->last_heartbeat = clock_.now();
  metering_.meter_all(clock_.now());
  EXPECT_EQ(charged(instance), 8 * 5'000);
}

TEST_F(MeteringComponentTest, AStoppedInstancesDiskOpensOncePerRunAndPaysUntilClosed) {
  model::Instance& instance = running("i-1");
  instance.spec.disk_gb = 100;
  metering_.open_run(instance, clock_.now());
  metering_.close_run(instance, clock_.now(), true);
  instance.state = model::InstanceState::kStopped;
  metering_.open_stopped_disk(instance);
  metering_.open_stopped_disk(instance);           // a replayed report
  ASSERT_EQ(metering_.usage(tenant_).size(), 2u);  // the run's, the disk's
  const model::UsageRecord& disk = *metering_.usage(tenant_).back();
  EXPECT_EQ(disk.kind, model::UsageKind::kStoppedDisk);
  EXPECT_FALSE(disk.ended_at);

  clock_.advance(Millis(3'600'000));
  metering_.close_stopped_disk(instance);
  EXPECT_TRUE(disk.ended_at);
  EXPECT_GT(disk.charged, 0);
  EXPECT_EQ(disk.metered_until, clock_.now());
}

TEST_F(MeteringComponentTest, InvoicesAreTheTenantsOwnAndDescribeRunsByTypeAndPricing) {
  model::Instance& instance = running("i-1");
  metering_.open_run(instance, clock_.now());
  clock_.advance(Millis(120'000));
  metering_.close_run(instance, clock_.now(), false);

  const model::Principal alice{tenant_, "key-a", model::Role::kTenantAdmin};
  const model::Principal bob{"t-other", "key-b", model::Role::kTenantAdmin};
  EXPECT_FALSE(metering_.invoice_months(bob, tenant_));
  const auto months = metering_.invoice_months(alice, tenant_);
  ASSERT_TRUE(months);
  ASSERT_EQ(months->size(), 1u);
  const auto invoice = metering_.invoice(alice, tenant_, months->front());
  ASSERT_TRUE(invoice) << invoice.error().message;
  EXPECT_EQ(invoice->charges, 120 * 5'000);
  ASSERT_FALSE(invoice->lines.empty());
  EXPECT_NE(invoice->lines.front().description.find("h100-80g on_demand"), std::string::npos)
      << invoice->lines.front().description;
}

}  // namespace
}  // namespace gpurent::controller
