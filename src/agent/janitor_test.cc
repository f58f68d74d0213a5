// The janitor: a volume's data and an instance's files are deleted once a newer desired state of
// the same node no longer lists them, never when they were not listed before, across an agent
// restart, not for another node's desired state, and (an instance whose runs have not ended) at a
// later pass once its deletion is possible.
#include "agent/janitor.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "agent/runtime/volumes.h"
#include "agent/test_util.h"

namespace gpurent::agent {
namespace {

using testing::TempDir;

model::DesiredState desired(std::string node, int64_t generation, std::vector<std::string> volumes,
                            std::optional<std::vector<std::string>> instances = std::nullopt) {
  model::DesiredState state{std::move(node), generation, {}, std::move(volumes)};
  state.instances = std::move(instances);
  return state;
}

class NodeJanitorTest : public ::testing::Test {
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
  // An instance's files, as its runs leave them.
  std::filesystem::path with_files(const std::string& id) {
    const auto home = dir_.path() / "instances" / id;
    std::filesystem::create_directories(home);
    std::ofstream(home / "file") << id;
    return home;
  }
  NodeJanitor janitor() {
    return NodeJanitor(dir_.path(), [this](std::string_view id) -> Status {
      if (busy_.contains(std::string(id))) {
        return fail(Error::conflict("instance_running", "a run has not ended"));
      }
      removed_.emplace_back(id);
      std::filesystem::remove_all(dir_.path() / "instances" / id);
      return {};
    });
  }

  TempDir dir_;
  std::set<std::string> busy_;
  std::vector<std::string> removed_;
};

TEST_F(NodeJanitorTest, DeletesOnlyTheDataOfAVolumeThatWasListedAndNoLongerIs) {
  const auto a = with_data("v-a");
  const auto b = with_data("v-b");
  const auto stranger = with_data("v-never-listed");
  NodeJanitor j = janitor();
  // The first desired state after a start only records: nothing was listed before it.
  ASSERT_TRUE(j.converge(desired("n-1", 5, {"v-a", "v-b"})));
  EXPECT_TRUE(std::filesystem::exists(a / "file"));
  // An older or repeated generation changes nothing, whatever it lists.
  ASSERT_TRUE(j.converge(desired("n-1", 5, {})));
  ASSERT_TRUE(j.converge(desired("n-1", 4, {})));
  EXPECT_TRUE(std::filesystem::exists(a / "file"));
  EXPECT_TRUE(std::filesystem::exists(b / "file"));

  ASSERT_TRUE(j.converge(desired("n-1", 6, {"v-b"})));
  EXPECT_FALSE(std::filesystem::exists(a));
  EXPECT_TRUE(std::filesystem::exists(b / "file"));
  EXPECT_TRUE(std::filesystem::exists(stranger / "file"));  // never listed: not ours to delete
}

TEST_F(NodeJanitorTest, RemembersWhatWasListedAcrossAnAgentRestart) {
  const auto a = with_data("v-a");
  const auto i = with_files("i-a");
  ASSERT_TRUE(janitor().converge(desired("n-1", 5, {"v-a"}, {{"i-a"}})));
  // Both are deleted while the agent is down; the restarted agent still cleans them up.
  ASSERT_TRUE(janitor().converge(desired("n-1", 1'048'581, {}, {{}})));
  EXPECT_FALSE(std::filesystem::exists(a));
  EXPECT_FALSE(std::filesystem::exists(i));
}

TEST_F(NodeJanitorTest, ADesiredStateOfAnotherNodeDeletesNothing) {
  const auto a = with_data("v-a");
  const auto i = with_files("i-a");
  ASSERT_TRUE(janitor().converge(desired("n-1", 5, {"v-a"}, {{"i-a"}})));
  // Registered anew (its identity lost): the new node's empty lists say nothing about n-1's files.
  NodeJanitor j = janitor();
  ASSERT_TRUE(j.converge(desired("n-2", 1, {}, {{}})));
  ASSERT_TRUE(j.converge(desired("n-2", 2, {}, {{}})));
  EXPECT_TRUE(std::filesystem::exists(a / "file"));
  EXPECT_TRUE(std::filesystem::exists(i / "file"));
  EXPECT_TRUE(removed_.empty());
}

TEST_F(NodeJanitorTest, ACorruptRecordIsAnErrorAndDeletesNothing) {
  const auto a = with_data("v-a");
  std::ofstream(dir_.path() / "volumes.json") << "{not json";
  NodeJanitor j = janitor();
  EXPECT_FALSE(j.converge(desired("n-1", 5, {})));
  EXPECT_TRUE(std::filesystem::exists(a / "file"));
}

TEST_F(NodeJanitorTest, AnInstanceLeavingTheListHasItsFilesDeletedOnceItsRunsHaveEnded) {
  const auto stopped = with_files("i-stopped");
  const auto moved = with_files("i-moved");
  const auto kept = with_files("i-kept");
  NodeJanitor j = janitor();
  ASSERT_TRUE(j.converge(desired("n-1", 5, {}, {{"i-kept", "i-moved", "i-stopped"}})));
  // i-moved is placed elsewhere, i-stopped deleted while its run is still stopping here.
  const auto unpacked = dir_.path() / "workdirs" / "unpacked";
  std::filesystem::create_directories(unpacked);
  std::ofstream(unpacked / "i-moved") << "u-1";  // its workdir was unpacked in its home
  busy_ = {"i-stopped"};
  ASSERT_TRUE(j.converge(desired("n-1", 6, {}, {{"i-kept"}})));
  EXPECT_EQ(removed_, std::vector<std::string>{"i-moved"});
  EXPECT_FALSE(std::filesystem::exists(moved));
  EXPECT_FALSE(std::filesystem::exists(unpacked / "i-moved"))
      << "a later run of it here unpacks its workdir again";
  EXPECT_TRUE(std::filesystem::exists(stopped / "file"));
  // The run ended: the next pass deletes the files, with no new desired state.
  busy_.clear();
  ASSERT_TRUE(j.converge(desired("n-1", 6, {}, {{"i-kept"}})));
  EXPECT_EQ(removed_, (std::vector<std::string>{"i-moved", "i-stopped"}));
  EXPECT_FALSE(std::filesystem::exists(stopped));
  EXPECT_TRUE(std::filesystem::exists(kept / "file"));
}

TEST_F(NodeJanitorTest, AnInstanceListedAgainIsNoLongerDoomed) {
  const auto back = with_files("i-back");
  busy_ = {"i-back"};
  NodeJanitor j = janitor();
  ASSERT_TRUE(j.converge(desired("n-1", 5, {}, {{"i-back"}})));
  ASSERT_TRUE(j.converge(desired("n-1", 6, {}, {{}})));          // doomed, but busy
  ASSERT_TRUE(j.converge(desired("n-1", 7, {}, {{"i-back"}})));  // placed here again
  busy_.clear();
  ASSERT_TRUE(j.converge(desired("n-1", 7, {}, {{"i-back"}})));
  EXPECT_TRUE(removed_.empty());
  EXPECT_TRUE(std::filesystem::exists(back / "file"));
}

TEST_F(NodeJanitorTest, AServerThatListsNoInstancesDeletesNone) {
  const auto i = with_files("i-a");
  NodeJanitor j = janitor();
  ASSERT_TRUE(j.converge(desired("n-1", 5, {}, {{"i-a"}})));
  ASSERT_TRUE(j.converge(desired("n-1", 6, {})));  // an older server: no list at all
  ASSERT_TRUE(j.converge(desired("n-1", 7, {}, {{}})));
  EXPECT_TRUE(removed_.empty()) << "what was listed before the gap is not known to be gone";
  EXPECT_TRUE(std::filesystem::exists(i / "file"));
}

}  // namespace
}  // namespace gpurent::agent
