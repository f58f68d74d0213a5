#include "model/node_report_json.h"

#include <gtest/gtest.h>

#include <string>

#include "model/codec.h"
#include "model/telemetry.h"

namespace gpurent::model {
namespace {

NodeReport full_report() {
  NodeReport report;
  report.applied_generation = 42;
  report.workloads.push_back({"i-a", 3, WorkloadPhase::kExited, 137, "killed \"hard\"\n"});
  report.workloads.push_back({"i-b", 1, WorkloadPhase::kRunning, std::nullopt, ""});
  report.node_api_address = "10.0.0.7:7071";
  report.node_api_secret = "gns_secret";
  report.container_runtime = false;
  report.container_toolkit = ContainerToolkit{
      .version = "1.17.7", .gpu_containers = false, .note = "containers get no GPUs here: old"};
  report.sent_at_ms = 1'764'550'000'123;
  GpuSample sample{.uuid = "GPU-a", .time_ms = 1'764'550'000'000, .gpu_util_pct = 97};
  sample.power_w = 612.5;
  report.telemetry.samples.push_back(sample);
  report.telemetry.xids.push_back({"GPU-a", 1'764'550'000'050, 79});
  report.telemetry.dropped = 2;
  return report;
}

void expect_same(const NodeReport& a, const NodeReport& b) {
  EXPECT_EQ(node_report_json(a), node_report_json(b));
  EXPECT_EQ(a.telemetry, b.telemetry);
}

std::string error_code(std::string_view text) {
  const auto report = read_node_report(text);
  return report ? "ok" : report.error().code;
}

TEST(NodeReportJson, ReadsBackWhatTheAgentWrites) {
  const NodeReport sent = full_report();
  const auto read = read_node_report(node_report_json(sent));
  ASSERT_TRUE(read) << read.error().message;
  expect_same(*read, sent);
  EXPECT_EQ(read->workloads[0].exit_code, 137);
  EXPECT_EQ(read->workloads[0].message, "killed \"hard\"\n");
  EXPECT_FALSE(read->workloads[1].exit_code);
  EXPECT_EQ(read->container_runtime, false);
  EXPECT_EQ(read->container_toolkit, sent.container_toolkit);
  EXPECT_EQ(read->sent_at_ms, 1'764'550'000'123);
}

TEST(NodeReportJson, IsWrittenInSortedMembersAndStampedWhenSent) {
  NodeReport report;
  report.applied_generation = 7;
  report.workloads.push_back({"i-a", 2, WorkloadPhase::kRunning, std::nullopt, "tab\there"});
  EXPECT_EQ(node_report_json(report),
            R"({"applied_generation":7,"node_api_address":"","node_api_secret":"","workloads":[)"
            R"({"exit_code":null,"instance_id":"i-a","message":"tab\there","phase":"running",)"
            R"("run":2}]})");
  report.sent_at_ms = 5;
  EXPECT_NE(node_report_json(report).find(R"("sent_at_ms":5,)"), std::string::npos);
  // The stamp given stands for the report's own.
  EXPECT_NE(node_report_json(report, 9).find(R"("sent_at_ms":9,)"), std::string::npos);
}

// A node's message may hold any bytes (a process's output): each byte that starts no valid UTF-8
// sequence becomes U+FFFD, and the text stays valid JSON; valid multi-byte characters are kept.
TEST(NodeReportJson, InvalidUtf8BecomesTheReplacementCharacter) {
  const std::string replacement = "\xEF\xBF\xBD";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ok \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "ok \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"},
      {"bad \xff byte", "bad " + replacement + " byte"},
      {"cut \xE2\x82", "cut " + replacement + replacement},
      {"overlong \xC0\xAF", "overlong " + replacement + replacement},
      {"surrogate \xED\xA0\x80", "surrogate " + replacement + replacement + replacement},
      {"too high \xF4\x90\x80\x80",
       "too high " + replacement + replacement + replacement + replacement},
      {"lone \x80", "lone " + replacement},
  };
  for (const auto& [message, expected] : cases) {
    NodeReport report;
    report.workloads.push_back({"i-a", 1, WorkloadPhase::kExited, 1, message});
    const std::string text = node_report_json(report);
    const Json parsed = Json::parse(text);  // throws on invalid UTF-8
    EXPECT_EQ(parsed["workloads"][0]["message"], expected) << message;
    const auto read = read_node_report(text);
    ASSERT_TRUE(read) << read.error().message;
    EXPECT_EQ(read->workloads[0].message, expected);
  }
}

TEST(NodeReportJson, LeavesTheTelemetryTextUndecodedWhenAskedTo) {
  const NodeReport sent = full_report();
  const Json json = Json::parse(node_report_json(sent));
  std::optional<std::string> text;
  const auto read = read_node_report(json.dump(), &text);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_TRUE(read->telemetry.empty());
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, json["telemetry"].get<std::string>());
  EXPECT_EQ(decode_telemetry_text(*text).value(), sent.telemetry);
  // No telemetry member: nothing.
  NodeReport quiet = sent;
  quiet.telemetry = {};
  ASSERT_TRUE(read_node_report(node_report_json(quiet), &text));
  EXPECT_FALSE(text);
}

TEST(NodeReportJson, OptionalMembersMayBeNullOrAbsentAndUnknownOnesAreSkipped) {
  const auto read = read_node_report(R"({
      "future": {"nested": [1, {"deep": [true, null]}], "s": "x"},
      "applied_generation": 1,
      "workloads": [{"instance_id": "i-a", "run": 2, "phase": "starting",
                     "exit_code": null, "extra": [1, 2]}],
      "container_runtime": null, "container_toolkit": null, "sent_at_ms": null, "telemetry": null,
      "applied_generation": 5})");
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->applied_generation, 5);  // a member given twice: its last value
  ASSERT_EQ(read->workloads.size(), 1u);
  EXPECT_EQ(read->workloads[0].instance_id, "i-a");
  EXPECT_EQ(read->workloads[0].run, 2);
  EXPECT_EQ(read->workloads[0].phase, WorkloadPhase::kStarting);
  EXPECT_FALSE(read->workloads[0].exit_code);
  EXPECT_EQ(read->workloads[0].message, "");
  EXPECT_FALSE(read->container_runtime);
  EXPECT_FALSE(read->container_toolkit);
  EXPECT_FALSE(read->sent_at_ms);
  EXPECT_TRUE(read->telemetry.empty());
  EXPECT_EQ(read->node_api_address, "");
}

TEST(NodeReportJson, RefusesWhatIsNotOneJsonObject) {
  EXPECT_EQ(error_code(""), "malformed_json");
  EXPECT_EQ(error_code("not json"), "malformed_json");
  EXPECT_EQ(error_code(R"({"applied_generation": 1, "workloads": [)"), "malformed_json");
  EXPECT_EQ(error_code(R"({"applied_generation": 1, "workloads": [], "s": "unclosed})"),
            "malformed_json");
  EXPECT_EQ(error_code("[]"), "malformed_json");
  EXPECT_EQ(error_code("42"), "malformed_json");
  EXPECT_EQ(error_code(R"({"applied_generation": 1, "workloads": []} {"more": 1})"),
            "malformed_json");
  EXPECT_EQ(error_code(R"({"applied_generation": 1, "workloads": []} x)"), "malformed_json");
  EXPECT_EQ(error_code("{\"applied_generation\": 1, \"workloads\": [], \"s\": \"bad \xff\"}"),
            "malformed_json");
  // Trailing white space is fine.
  EXPECT_EQ(error_code("{\"applied_generation\": 1, \"workloads\": []} \n"), "ok");
  // Nesting deeper than kMaxJsonDepth, even in a member nobody reads.
  std::string deep = R"({"applied_generation": 1, "workloads": [], "x": )";
  deep += std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']') + "}";
  EXPECT_EQ(error_code(deep), "malformed_json");
}

TEST(NodeReportJson, RefusesMissingWrongAndUnknownValuesNamingTheMember) {
  const auto message_of = [](std::string_view text) {
    const auto report = read_node_report(text);
    EXPECT_FALSE(report) << text;
    if (report) return std::string();
    EXPECT_EQ(report.error().code, "invalid_message") << text;
    return report.error().message;
  };
  EXPECT_NE(message_of(R"({"workloads": []})").find("applied_generation"), std::string::npos);
  EXPECT_NE(message_of(R"({"applied_generation": 1})").find("workloads"), std::string::npos);
  EXPECT_NE(
      message_of(R"({"applied_generation": "1", "workloads": []})").find("applied_generation"),
      std::string::npos);
  EXPECT_NE(message_of(R"({"applied_generation": 1, "workloads": "x"})").find("workloads"),
            std::string::npos);
  EXPECT_NE(
      message_of(R"({"applied_generation": 1, "workloads": [{"run": 1, "phase": "running"}]})")
          .find("instance_id"),
      std::string::npos);
  EXPECT_NE(
      message_of(
          R"({"applied_generation": 1, "workloads": [{"instance_id": "i", "phase": "running"}]})")
          .find("run"),
      std::string::npos);
  EXPECT_NE(message_of(R"({"applied_generation": 1,
                           "workloads": [{"instance_id": "i", "run": 1, "phase": "dancing"}]})")
                .find("dancing"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"applied_generation": 1, "workloads": [{"instance_id": "i", "run": 1,
                           "phase": "exited", "exit_code": 4294967296}]})")
                .find("exit_code"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"applied_generation": 99999999999999999999, "workloads": []})")
                .find("applied_generation"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"applied_generation": 1, "workloads": [], "container_runtime": 1})")
                .find("container_runtime"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"applied_generation": 1, "workloads": [7]})").find("workloads"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"applied_generation": 1, "workloads": [],
                           "container_toolkit": {"version": "1.17.8"}})")
                .find("gpu_containers"),
            std::string::npos);
}

TEST(NodeReportJson, RefusesTelemetryThatIsNotAFrame) {
  // The JSON column form of older agents: refused whether or not the caller decodes it.
  const std::string old =
      R"({"applied_generation": 1, "workloads": [], "telemetry": {"gpus": [], "xids": []}})";
  std::optional<std::string> text;
  for (const auto& read : {read_node_report(old), read_node_report(old, &text)}) {
    ASSERT_FALSE(read);
    EXPECT_EQ(read.error().code, "invalid_message");
    EXPECT_NE(read.error().message.find("upgrade the agent"), std::string::npos);
  }
  const auto bad =
      read_node_report(R"({"applied_generation": 1, "workloads": [], "telemetry": "not base64!"})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "invalid_message");
}

TEST(NodeReportJson, ReadsReportsLargerThanThePreviousOnesOnTheSameThread) {
  NodeReport small;
  ASSERT_TRUE(read_node_report(node_report_json(small)));
  NodeReport large;
  for (int i = 0; i < 2'000; ++i) {
    large.workloads.push_back(
        {"i-" + std::to_string(i), i, WorkloadPhase::kRunning, std::nullopt, std::string(40, 'm')});
  }
  const std::string text = node_report_json(large);
  ASSERT_GT(text.size(), 100'000u);
  const auto read = read_node_report(text);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->workloads.size(), 2'000u);
  EXPECT_EQ(read->workloads.back().run, 1'999);
  ASSERT_TRUE(read_node_report(node_report_json(small)));
}

}  // namespace
}  // namespace gpurent::model
