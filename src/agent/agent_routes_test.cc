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

  EXPECT_EQ(watch_call(7).target, "/v1/agent/desired?after=7&watch=true");
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

TEST(AgentRoutesTest, AWatchStreamIsReadLineByLineWhateverItsPieces) {
  const std::string first = R"({"node_id":"n-1","generation":3,"workloads":[]})";
  const std::string second = R"({"node_id":"n-1","generation":4,"workloads":[]})";
  const std::string body = first + "\n\n" + second + "\n";
  // Every way to cut the body in two gives the same lines.
  for (size_t cut = 0; cut <= body.size(); ++cut) {
    DesiredStream stream;
    auto head = stream.feed(std::string_view(body).substr(0, cut));
    auto tail = stream.feed(std::string_view(body).substr(cut));
    ASSERT_TRUE(head && tail) << cut;
    std::vector<std::optional<model::DesiredState>> lines = std::move(*head);
    for (auto& line : *tail) lines.push_back(std::move(line));
    ASSERT_EQ(lines.size(), 3u) << cut;
    EXPECT_EQ(lines[0]->generation, 3);
    EXPECT_FALSE(lines[1]) << "the keep-alive";
    EXPECT_EQ(lines[2]->generation, 4);
    EXPECT_FALSE(*stream.finish());
  }
  // A server that answers as a long poll sends one document without a newline.
  DesiredStream long_poll;
  EXPECT_TRUE(long_poll.feed(first)->empty());
  EXPECT_EQ((*long_poll.finish())->generation, 3);

  DesiredStream bad;
  EXPECT_EQ(bad.feed("{}\n").error().code, "invalid_message");
  DesiredStream endless;
  const std::string huge(client::kMaxResponseBodyBytes / 2 + 1, ' ');
  EXPECT_TRUE(endless.feed(huge));
  EXPECT_EQ(endless.feed(huge).error().code, "invalid_message");
}

TEST(AgentRoutesTest, AWatchEndsOkWhenStoppedOrEndedAndFailsOnABadLineOrStatus) {
  const std::string state = R"({"node_id":"n-1","generation":3,"workloads":[]})";
  std::vector<int64_t> seen;
  const auto record = [&](std::optional<model::DesiredState> desired) {
    seen.push_back(desired ? desired->generation : 0);
    return seen.size() < 2;  // stop at the second line
  };
  DesiredWatch stopped(record);
  EXPECT_FALSE(stopped.piece(state + "\n\n" + state + "\n"));
  EXPECT_TRUE(stopped.end({200, "application/x-ndjson", ""}));
  EXPECT_EQ(seen, (std::vector<int64_t>{3, 0}));

  seen.clear();
  DesiredWatch long_poll(record);  // one document, no newline, then the end
  EXPECT_TRUE(long_poll.piece(state));
  EXPECT_TRUE(long_poll.end({200, "application/json", ""}));
  EXPECT_EQ(seen, std::vector<int64_t>{3});

  DesiredWatch broken(record);
  EXPECT_FALSE(broken.piece("{}\n"));
  EXPECT_EQ(broken.end({200, "application/x-ndjson", ""}).error().code, "invalid_message");
  DesiredWatch refused(record);
  EXPECT_EQ(
      refused.end({401, "application/problem+json", R"({"code":"unauthenticated"})"}).error().kind,
      ErrorKind::kUnauthenticated);
}

}  // namespace
}  // namespace gpurent::agent::routes
