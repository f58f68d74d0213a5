#include "agent/agent_routes.h"

#include <gtest/gtest.h>

#include "model/node_report_json.h"

namespace gpurent::agent::routes {
namespace {

TEST(AgentRoutesTest, CallsNameTheRouteAndCarryTheCodec) {
  model::NodeRegistration registration;
  registration.name = "n1";
  registration.fabric_group = "ib-7";
  registration.labels = {{"zone", "b"}};
  const Call reg = register_call(registration);
  EXPECT_EQ(reg.method, "POST");
  EXPECT_EQ(reg.target, "/v1/agent/register");
  const auto decoded = model::decode_message<model::NodeRegistration>(Json::parse(reg.body));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->fabric_group, "ib-7");
  EXPECT_EQ(decoded->labels.at("zone"), "b");

  EXPECT_EQ(desired_call(7, std::chrono::seconds(20)).target,
            "/v1/agent/desired?after=7&wait_s=20");
  const Call logs = logs_call("i-a b", 2, 10, "bytes");
  EXPECT_EQ(logs.target, "/v1/agent/logs?instance=i-a%20b&run=2&offset=10");
  EXPECT_EQ(logs.content_type, "application/octet-stream");
  EXPECT_EQ(logs.body, "bytes");
}

TEST(AgentRoutesTest, AReportWithInvalidUtf8IsStillSent) {
  model::NodeReport report;
  report.workloads.push_back({"i-a", 1, model::WorkloadPhase::kExited, 1, "bad \xff byte"});
  EXPECT_NE(report_call(report, from_unix_ms(1)).body.find("bad"), std::string::npos);
}

TEST(AgentRoutesTest, AReportSaysWhenItWasSent) {
  const Call call = report_call(model::NodeReport{}, from_unix_ms(1'764'550'000'123));
  const auto sent = model::read_node_report(call.body);
  ASSERT_TRUE(sent);
  EXPECT_EQ(sent->sent_at_ms, 1'764'550'000'123);
}

TEST(AgentRoutesTest, AnswersBecomeValuesOrTheServersError) {
  const auto state = desired_answer(
      {200, "application/json", R"({"node_id":"n-1","generation":3,"workloads":[]})"});
  ASSERT_TRUE(state);
  EXPECT_EQ(state->generation, 3);
  EXPECT_EQ(desired_answer({200, "application/json", "{}"}).error().code, "invalid_message");

  const auto refused = register_answer(
      {401, "application/problem+json", R"({"code":"invalid_join_token","detail":"unknown"})"});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kUnauthenticated);
  EXPECT_EQ(refused.error().code, "invalid_join_token");

  EXPECT_EQ(*logs_answer({200, "application/json", R"({"size":12})"}), 12);
  EXPECT_EQ(*logs_answer({409, "application/json", R"({"size":5})"}), 5);
  EXPECT_EQ(logs_answer({404, "application/problem+json", R"({"code":"not_found"})"}).error().kind,
            ErrorKind::kNotFound);
  EXPECT_TRUE(report_answer({200, "application/json", R"({"generation":3})"}));
  EXPECT_EQ(report_answer({503, "text/plain", "away"}).error().kind, ErrorKind::kUnavailable);
}

}  // namespace
}  // namespace gpurent::agent::routes
