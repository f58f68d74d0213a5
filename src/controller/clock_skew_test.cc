// The agents' clock skew (clock_skew.cc): measured per report against the controller's Clock,
// shown per node, exported for /metrics, and watched by the built-in agent_clock_skew rule.
#include <gtest/gtest.h>

#include <algorithm>

#include "controller/controller_test_fixture.h"

namespace gpurent::controller {
namespace {

class ClockSkewTest : public ControllerTest {
 protected:
  // A report whose agent clock is `skew_ms` ahead of the controller's (behind when negative).
  void report_skewed(int64_t skew_ms) {
    model::NodeReport sent{.applied_generation = ctl_.fleet().desired_state(node_)->generation};
    sent.sent_at_ms = to_unix_ms(clock_.now()) + skew_ms;
    ASSERT_TRUE(ctl_.apply_report(node_, sent));
  }
  void seconds(int count, int64_t skew_ms) {
    for (int i = 0; i < count; ++i) {
      clock_.advance(Millis(1'000));
      report_skewed(skew_ms);
      ctl_.tick();
    }
  }
  std::vector<monitor::Alert> skew_alerts() {
    auto active = ctl_.fleet().monitor().alerts(admin_, 100).active;
    std::erase_if(active, [](const monitor::Alert& a) { return a.rule != "agent_clock_skew"; });
    return active;
  }
};

TEST_F(ClockSkewTest, IsUnknownUntilAReportSaysWhenItWasSent) {
  EXPECT_FALSE(ctl_.fleet().nodes().clock_skew_ms(node_));
  report(node_, {});  // no send time: not measured
  EXPECT_FALSE(ctl_.fleet().nodes().clock_skew_ms(node_));
  EXPECT_TRUE(ctl_.fleet().platform_stats().clock_skews.empty());
  report_skewed(-1'250);
  EXPECT_EQ(ctl_.fleet().nodes().clock_skew_ms(node_), -1'250);
  // The latest report counts.
  report_skewed(40);
  EXPECT_EQ(ctl_.fleet().nodes().clock_skew_ms(node_), 40);
  const auto stats = ctl_.fleet().platform_stats();
  ASSERT_EQ(stats.clock_skews.size(), 1u);
  EXPECT_EQ(stats.clock_skews[0].node_id, node_);
  EXPECT_DOUBLE_EQ(stats.clock_skews[0].seconds, 0.04);
}

TEST_F(ClockSkewTest, ASkewAboveTheLimitForAMinuteFiresAndResolvesWhenFixed) {
  // Within the limit (2 s by default) either way: nothing.
  seconds(70, 1'900);
  seconds(70, -1'900);
  EXPECT_TRUE(skew_alerts().empty());
  // A clock 5 s behind: |skew| is what counts; pending, then firing after a minute.
  seconds(10, -5'000);
  auto alerts = skew_alerts();
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].state, monitor::AlertState::kPending);
  EXPECT_EQ(alerts[0].subject.subject, node_);
  EXPECT_DOUBLE_EQ(*alerts[0].subject.value, 5'000);
  seconds(58, -5'000);
  alerts = skew_alerts();
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].state, monitor::AlertState::kFiring);
  const auto fired = ctl_.events().list(admin_, {.kind = "alert.firing"}, 100);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_NE(fired[0]->message.find("agent_clock_skew"), std::string::npos);
  // The clock is fixed: it resolves at the next evaluations.
  seconds(10, 0);
  EXPECT_TRUE(skew_alerts().empty());
  EXPECT_EQ(ctl_.events().list(admin_, {.kind = "alert.resolved"}, 100).size(), 1u);
}

TEST_F(ClockSkewTest, TheLimitIsAnOption) {
  Controller strict(clock_, {.seed = 3, .clock_skew_limit = Millis(100)});
  const auto rules = strict.fleet().monitor().rules(admin_);
  ASSERT_TRUE(rules);
  const auto rule = std::find_if(rules->begin(), rules->end(), [](const monitor::Rule& r) {
    return r.name == "agent_clock_skew";
  });
  ASSERT_NE(rule, rules->end());
  EXPECT_DOUBLE_EQ(rule->threshold, 100);
  EXPECT_EQ(rule->for_ms, 60'000);
}

}  // namespace
}  // namespace gpurent::controller
