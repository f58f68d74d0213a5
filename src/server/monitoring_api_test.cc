// The API's form of alert rules against the store's: one member for member the other.
#include "server/monitoring_api.h"

#include <gtest/gtest.h>

#include "monitor/alerts_json.h"

namespace gpurent::server {
namespace {

TEST(MonitoringApiTest, ARuleShowsAsTheStoreWritesIt) {
  std::vector<monitor::Rule> rules = monitor::builtin_rules();
  monitor::Rule idle = rules.front();
  idle.name = "idle_i_1";
  idle.signal = *monitor::parse_signal("instance_gpu_util");
  idle.comparison = monitor::Comparison::kLt;
  idle.threshold = 5;
  idle.for_ms = 1'800'000;
  idle.scope = {.kind = monitor::Scope::Kind::kInstance, .value = "i-1"};
  idle.idle = monitor::IdlePolicy{.auto_stop = true};
  rules.push_back(idle);
  monitor::Rule absent = rules.front();
  absent.name = "silent";
  absent.comparison = monitor::Comparison::kAbsent;
  absent.scope = {.kind = monitor::Scope::Kind::kGpuType, .value = "h100-80g"};
  rules.push_back(absent);
  for (const auto& rule : rules) {
    EXPECT_EQ(Json(rule_view(rule)), monitor::rule_to_json(rule)) << rule.name;
  }
  const Json listed = rule_list_view(rules);
  ASSERT_EQ(listed["items"].size(), rules.size());
  EXPECT_EQ(listed["items"].back()["scope_value"], "h100-80g");
  EXPECT_EQ(listed["items"][rules.size() - 2]["idle_auto_stop"], true);
  EXPECT_TRUE(listed["next_cursor"].is_null());
}

}  // namespace
}  // namespace gpurent::server
