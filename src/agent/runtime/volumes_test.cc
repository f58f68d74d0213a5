#include "agent/runtime/volumes.h"

#include <gtest/gtest.h>

#include <fstream>

#include "agent/test_util.h"

namespace gpurent::agent {
namespace {

using testing::TempDir;

model::DesiredState desired(std::string node, int64_t generation,
                            std::vector<std::string> volumes) {
  return {std::move(node), generation, {}, std::move(volumes)};
}

class VolumeJanitorTest : public ::testing::Test {
 protected:
  // A volume with data, as a workload's first start leaves it.
  std::filesystem::path with_data(const std::string& id) {
    model::WorkloadSpec spec;
    spec.volumes = {{id, "/data"}};
    auto prepared = prepare_volumes(dir_.path(), spec);
    EXPECT_TRUE(prepared) << prepared.error().message;
    std::ofstream(prepared->at(0).dir / "file") << id;
    return prepared->at(0).dir;
  }

  TempDir dir_;
};

TEST_F(VolumeJanitorTest, DeletesOnlyTheDataOfAVolumeThatWasListedAndNoLongerIs) {
  const auto a = with_data("v-a");
  const auto b = with_data("v-b");
  const auto stranger = with_data("v-never-listed");
  VolumeJanitor janitor(dir_.path());
  // The first desired state after a start only records: nothing was listed before it.
  ASSERT_TRUE(janitor.converge(desired("n-1", 5, {"v-a", "v-b"})));
  EXPECT_TRUE(std::filesystem::exists(a / "file"));
  // An older or repeated generation changes nothing, whatever it lists.
  ASSERT_TRUE(janitor.converge(desired("n-1", 5, {})));
  ASSERT_TRUE(janitor.converge(desired("n-1", 4, {})));
  EXPECT_TRUE(std::filesystem::exists(a / "file"));
  EXPECT_TRUE(std::filesystem::exists(b / "file"));

  ASSERT_TRUE(janitor.converge(desired("n-1", 6, {"v-b"})));
  EXPECT_FALSE(std::filesystem::exists(a));
  EXPECT_TRUE(std::filesystem::exists(b / "file"));
  EXPECT_TRUE(std::filesystem::exists(stranger / "file"));  // never listed: not ours to delete
}

TEST_F(VolumeJanitorTest, RemembersWhatWasListedAcrossAnAgentRestart) {
  const auto a = with_data("v-a");
  ASSERT_TRUE(VolumeJanitor(dir_.path()).converge(desired("n-1", 5, {"v-a"})));
  // The volume is deleted while the agent is down; the restarted agent still cleans it up.
  VolumeJanitor restarted(dir_.path());
  ASSERT_TRUE(restarted.converge(desired("n-1", 1'048'581, {})));
  EXPECT_FALSE(std::filesystem::exists(a));
}

TEST_F(VolumeJanitorTest, ADesiredStateOfAnotherNodeDeletesNothing) {
  const auto a = with_data("v-a");
  ASSERT_TRUE(VolumeJanitor(dir_.path()).converge(desired("n-1", 5, {"v-a"})));
  // Registered anew (its identity lost): the new node's empty list says nothing about n-1's data.
  VolumeJanitor janitor(dir_.path());
  ASSERT_TRUE(janitor.converge(desired("n-2", 1, {})));
  EXPECT_TRUE(std::filesystem::exists(a / "file"));
  ASSERT_TRUE(janitor.converge(desired("n-2", 2, {})));
  EXPECT_TRUE(std::filesystem::exists(a / "file"));
}

TEST_F(VolumeJanitorTest, ACorruptRecordIsAnErrorAndDeletesNothing) {
  const auto a = with_data("v-a");
  std::ofstream(dir_.path() / "volumes.json") << "{not json";
  VolumeJanitor janitor(dir_.path());
  EXPECT_FALSE(janitor.converge(desired("n-1", 5, {})));
  EXPECT_TRUE(std::filesystem::exists(a / "file"));
}

TEST(VolumesEnvTest, ListsEachVolumeWithWhereTheWorkloadFindsIt) {
  const std::vector<PreparedVolume> volumes = {{{"v-1", "/data"}, "/node/volumes/v-1"},
                                               {{"v-2", "/mnt/x"}, "/node/volumes/v-2"}};
  EXPECT_EQ(volumes_env(volumes, [](const PreparedVolume& v) { return v.mount.mount_path; }),
            "v-1=/data,v-2=/mnt/x");
  EXPECT_EQ(volumes_env({}, [](const PreparedVolume& v) { return v.dir.string(); }), "");
}

}  // namespace
}  // namespace gpurent::agent
