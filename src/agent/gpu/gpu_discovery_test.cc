#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>

#include "agent/gpu/discovery.h"
#include "agent/gpu/nvml.h"
#include "agent/gpu/sim_gpus.h"
#include "agent/test_util.h"

namespace gpurent::agent {
namespace {

using testing::TempDir;

constexpr const char* kNoSuchLibrary = "libgpurent-test-no-such-nvml.so.1";

std::vector<std::string> uuids_of(const std::vector<model::Gpu>& gpus) {
  std::vector<std::string> out;
  for (const auto& gpu : gpus) out.push_back(gpu.uuid);
  return out;
}

TEST(SimGpusTest, ExpandsTheSpecIntoIndexedGpusWithNvmlShapedUuids) {
  TempDir dir;
  const auto gpus = simulated_gpus("4xa100-80g,2xrtx4090-24g", dir.path());
  ASSERT_TRUE(gpus) << gpus.error().message;
  ASSERT_EQ(gpus->size(), 6u);
  const std::regex uuid_shape("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  for (size_t i = 0; i < gpus->size(); ++i) {
    const auto& gpu = (*gpus)[i];
    EXPECT_EQ(gpu.index, static_cast<int>(i));
    EXPECT_TRUE(std::regex_match(gpu.uuid, uuid_shape)) << gpu.uuid;
    EXPECT_EQ(gpu.type, i < 4 ? "a100-80g" : "rtx4090-24g");
  }
  EXPECT_EQ((*gpus)[0].name, "NVIDIA A100 80GB");
  EXPECT_EQ((*gpus)[0].memory_mb, 81920);
  EXPECT_EQ((*gpus)[5].memory_mb, 24576);
  const auto uuids = uuids_of(*gpus);
  EXPECT_EQ(std::set<std::string>(uuids.begin(), uuids.end()).size(), uuids.size());
}

TEST(SimGpusTest, KeepsUuidsAcrossRestartsAndDrawsNewOnesForANewSpec) {
  TempDir dir;
  const auto first = simulated_gpus("2xh100-80g", dir.path());
  const auto again = simulated_gpus("2xh100-80g", dir.path());
  ASSERT_TRUE(first && again);
  EXPECT_EQ(uuids_of(*first), uuids_of(*again));

  const auto changed = simulated_gpus("3xh100-80g", dir.path());
  ASSERT_TRUE(changed);
  ASSERT_EQ(changed->size(), 3u);
  const auto new_uuids = uuids_of(*changed);
  for (const auto& uuid : uuids_of(*first)) {
    EXPECT_EQ(std::count(new_uuids.begin(), new_uuids.end(), uuid), 0);
  }
  const auto after_change = simulated_gpus("3xh100-80g", dir.path());
  ASSERT_TRUE(after_change);
  EXPECT_EQ(uuids_of(*changed), uuids_of(*after_change));
}

TEST(SimGpusTest, RejectsAnUnknownGpuType) {
  TempDir dir;
  const auto gpus = simulated_gpus("2xnot-a-gpu", dir.path());
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().code, "invalid_sim_gpus");
}

TEST(NvmlGpuTest, MissingLibraryIsAnErrorValue) {
  const auto gpus = discover_nvml_gpus(kNoSuchLibrary);
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(gpus.error().code, "nvml_unavailable");
}

TEST(NvmlGpuTest, LibraryWithoutNvmlSymbolsIsAnErrorValue) {
  const auto gpus = discover_nvml_gpus("libm.so.6");  // loads, but is not NVML
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().code, "nvml_unavailable");
}

TEST(GpuDiscoveryTest, FallsBackToSimulatedH100sWithoutNvml) {
  TempDir dir;
  const auto inventory = discover_gpus("", dir.path(), kNoSuchLibrary);
  ASSERT_TRUE(inventory) << inventory.error().message;
  EXPECT_TRUE(inventory->simulated);
  ASSERT_EQ(inventory->gpus.size(), 8u);
  EXPECT_EQ(inventory->gpus[0].type, "h100-80g");
}

TEST(GpuDiscoveryTest, ASimSpecForcesSimulation) {
  TempDir dir;
  const auto inventory = discover_gpus("2xl4-24g", dir.path());
  ASSERT_TRUE(inventory);
  EXPECT_TRUE(inventory->simulated);
  ASSERT_EQ(inventory->gpus.size(), 2u);
  EXPECT_EQ(inventory->gpus[1].type, "l4-24g");
}

}  // namespace
}  // namespace gpurent::agent
