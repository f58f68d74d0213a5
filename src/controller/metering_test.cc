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
  EXPECT_EQ(second.ledger_total(), 0);
  EXPECT_EQ(*second.balance(alice_, alice_.tenant_id), balance(alice_));
  EXPECT_EQ(ids(second.transfers(alice_.tenant_id)), ids(ctl_.transfers(alice_.tenant_id)));
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
  EXPECT_EQ(*second.balance(alice_, alice_.tenant_id), balance(alice_));

  // What the store holds is what the controller holds.
  const auto again_ptr = restarted(9);
  const Controller& again = *again_ptr;
  EXPECT_EQ(ids(again.transfers(alice_.tenant_id)), ids(ctl_.transfers(alice_.tenant_id)));
  EXPECT_EQ(*again.balance(bob_, bob_.tenant_id), balance(bob_));
  const auto usage = again.usage(alice_.tenant_id);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0]->billed_seconds, 121);
  EXPECT_EQ(usage[0]->charged, ctl_.usage(alice_.tenant_id)[0]->charged);
}

}  // namespace
}  // namespace gpurent::controller
