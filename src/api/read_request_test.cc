// The request reader alone: each shape rule a body can break, with the code and member a client
// is told.
#include "api/read_request.h"

#include <gtest/gtest.h>

#include "api/accounts.h"
#include "api/fleet.h"
#include "api/workloads.h"

namespace gpurent::api {
namespace {

template <class T>
std::string outcome(std::string_view body) {
  const auto read = read_request<T>(Json::parse(body));
  return read ? "ok" : read.error().code + ": " + read.error().message;
}

TEST(ReadRequestTest, ReadsEachMemberByItsTypeAndNullAsAbsent) {
  const auto request = read_request<JobCreate>(Json::parse(R"({
      "gpu_types": ["h100-80g"], "gpu_count": 2, "command": "python3 train.py", "env": {"A": "1"},
      "pricing": "spot", "volumes": [{"volume_id": "v-1", "mount_path": "/data"}],
      "queue": false, "image": null, "array": 8})"));
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ(request->workload.gpu_types, std::vector<std::string>{"h100-80g"});
  EXPECT_EQ(request->workload.gpu_count, 2);
  EXPECT_EQ(std::get<std::string>(*request->workload.command), "python3 train.py");
  EXPECT_EQ(request->workload.pricing, model::PricingModel::kSpot);
  ASSERT_TRUE(request->workload.volumes);
  EXPECT_EQ(request->workload.volumes->front().mount_path, "/data");
  EXPECT_EQ(request->workload.queue, false);
  EXPECT_FALSE(request->workload.image);  // null: absent
  EXPECT_FALSE(request->workload.gpu_type);
  EXPECT_EQ(request->array, 8);
  EXPECT_FALSE(request->nodes);
}

TEST(ReadRequestTest, RefusesWhatIsNotTheTypesShapeNamingTheMember) {
  EXPECT_EQ(outcome<VolumeCreate>(R"({"name": "data", "size_gb": 10})"), "ok");
  EXPECT_EQ(outcome<VolumeCreate>(R"({"name": "data", "size_gb": 10, "sise_gb": 1})"),
            "unknown_field: unknown field 'sise_gb'");
  EXPECT_EQ(outcome<VolumeCreate>(R"({"name": "data"})"),
            "invalid_field: field 'size_gb' is required");
  EXPECT_EQ(outcome<VolumeCreate>(R"({"name": null, "size_gb": 1})"),
            "invalid_field: field 'name' is required");
  EXPECT_EQ(outcome<VolumeCreate>(R"({"name": 7, "size_gb": 1})"),
            "invalid_field: field 'name' must be a string");
  EXPECT_EQ(outcome<VolumeCreate>(R"({"name": "d", "size_gb": "1"})"),
            "invalid_field: field 'size_gb' must be an integer");
  EXPECT_EQ(outcome<VolumeCreate>(R"({"name": "d", "size_gb": 18446744073709551615})"),
            "invalid_field: field 'size_gb' is out of range");
  EXPECT_EQ(outcome<InstanceCreate>(R"({"queue": "no"})"),
            "invalid_field: field 'queue' must be true or false");
  EXPECT_EQ(outcome<InstanceCreate>(R"({"env": {"A": 1}})"),
            "invalid_field: field 'env' must be a string");
  EXPECT_EQ(outcome<InstanceCreate>(R"({"gpu_types": ["a", 2]})"),
            "invalid_field: field 'gpu_types' entries must be strings");
  EXPECT_EQ(outcome<InstanceCreate>(R"({"command": 5})"),
            "invalid_field: field 'command' must be a non-empty array of strings or a string");
  EXPECT_EQ(outcome<InstanceCreate>(R"({"volumes": [{"volume_id": "v"}]})"),
            "invalid_field: field 'mount_path' is required");
  EXPECT_EQ(outcome<InstanceCreate>(R"({"volumes": [{"volume_id": "v", "path": "/d"}]})"),
            "unknown_field: unknown field 'path'");
  EXPECT_EQ(outcome<InstanceCreate>(R"({"restart_policy": "always"})"),
            "invalid_field: field 'restart_policy' must be one of on_node_failure, never");
  EXPECT_EQ(outcome<JobCreate>(R"({"gpu_type": "x"})"),
            "invalid_field: field 'command' is required");
}

TEST(ReadRequestTest, AnUnknownEnumNameGetsTheErrorTheCallerSays) {
  const auto read = read_request<InstanceCreate>(
      Json::parse(R"({"pricing": "free"})"),
      [](std::string_view member, std::string_view text, std::string_view) {
        return Error::unprocessable("unsupported_" + std::string(member), std::string(text));
      });
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, "unsupported_pricing");
  EXPECT_EQ(read.error().message, "free");
}

}  // namespace
}  // namespace gpurent::api
