#include "agent/runtime/volumes.h"

#include <gtest/gtest.h>

namespace gpurent::agent {
namespace {

TEST(VolumesEnvTest, ListsEachVolumeWithWhereTheWorkloadFindsIt) {
  const std::vector<PreparedVolume> volumes = {{{"v-1", "/data"}, "/node/volumes/v-1"},
                                               {{"v-2", "/mnt/x"}, "/node/volumes/v-2"}};
  EXPECT_EQ(volumes_env(volumes, [](const PreparedVolume& v) { return v.mount.mount_path; }),
            "v-1=/data,v-2=/mnt/x");
  EXPECT_EQ(volumes_env({}, [](const PreparedVolume& v) { return v.dir.string(); }), "");
}

}  // namespace
}  // namespace gpurent::agent
