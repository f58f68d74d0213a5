#include "model/desired_state_json.h"

#include <gtest/gtest.h>

#include <string>

namespace gpurent::model {
namespace {

// The round trip of everything desired_state_json writes is CodecTest's (codec_test.cc).

std::string message_of(std::string_view text) {
  const auto desired = read_desired_state(text);
  EXPECT_FALSE(desired) << text;
  if (desired) return "";
  EXPECT_EQ(desired.error().code, "invalid_message") << text;
  return desired.error().message;
}

TEST(DesiredStateJson, OptionalMembersMayBeAbsentAndUnknownOnesAreSkipped) {
  const auto read = read_desired_state(R"({"node_id": "n-1", "generation": 3, "future": {"x": [1]},
      "workloads": [{"instance_id": "i-1", "run": 1, "should_run": true, "command": [],
                     "env": {}, "gpus": [], "new_member": null}]})");
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->generation, 3);
  EXPECT_TRUE(read->volumes.empty());
  ASSERT_EQ(read->workloads.size(), 1u);
  const WorkloadSpec& workload = read->workloads[0];
  EXPECT_EQ(workload.cpu, 0);
  EXPECT_TRUE(workload.image.empty());
  EXPECT_TRUE(workload.volumes.empty());
  EXPECT_TRUE(workload.services.empty());
  EXPECT_FALSE(workload.job);
  // A member given twice counts as its last value.
  const auto twice = read_desired_state(
      R"({"node_id": "n-1", "generation": 3, "generation": 4, "workloads": []})");
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->generation, 4);
}

TEST(DesiredStateJson, RefusesWhatIsNotOneJsonObject) {
  for (const std::string_view text :
       {"", "[]", "not json", R"({"node_id": "n", "generation": 1, "workloads": [)",
        R"({"node_id": "n", "generation": 1, "workloads": []} trailing)"}) {
    const auto read = read_desired_state(text);
    ASSERT_FALSE(read) << text;
    EXPECT_EQ(read.error().code, "malformed_json") << text;
  }
}

TEST(DesiredStateJson, RefusesMissingAndWrongMembersNamingThem) {
  EXPECT_NE(message_of(R"({"generation": 1, "workloads": []})").find("node_id"), std::string::npos);
  EXPECT_NE(message_of(R"({"node_id": "n", "workloads": []})").find("generation"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"node_id": "n", "generation": 1})").find("workloads"),
            std::string::npos);
  EXPECT_NE(
      message_of(R"({"node_id": "n", "generation": "1", "workloads": []})").find("generation"),
      std::string::npos);
  const std::string workload_head =
      R"({"node_id": "n", "generation": 1, "workloads": [{"instance_id": "i", "run": 1, )";
  EXPECT_NE(message_of(workload_head + R"("should_run": true, "env": {}, "gpus": []}]})")
                .find("workloads[].command"),
            std::string::npos);
  EXPECT_NE(
      message_of(workload_head + R"("should_run": true, "command": [1], "env": {}, "gpus": []}]})")
          .find("workloads[].command"),
      std::string::npos);
  EXPECT_NE(message_of(workload_head +
                       R"("should_run": true, "command": [], "env": {"A": 1}, "gpus": []}]})")
                .find("workloads[].env"),
            std::string::npos);
  EXPECT_NE(message_of(workload_head + R"("should_run": true, "command": [], "env": {},
                       "gpus": [], "cpu": 4294967296}]})")
                .find("workloads[].cpu"),
            std::string::npos);
  EXPECT_NE(message_of(workload_head + R"("should_run": true, "command": [], "env": {},
                       "gpus": [], "volumes": [{"volume_id": "v-1"}]}]})")
                .find("workloads[].volumes[].mount_path"),
            std::string::npos);
  EXPECT_NE(message_of(workload_head + R"("should_run": true, "command": [], "env": {},
                       "gpus": [], "job": {"id": "j", "index": 0, "array_size": 1, "nodes": 1,
                       "rank": 0, "gpus_per_node": 1, "master_addr": "a"}}]})")
                .find("workloads[].job.master_port"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"node_id": "n", "generation": 1, "workloads": [7]})").find("workloads"),
            std::string::npos);
}

}  // namespace
}  // namespace gpurent::model
