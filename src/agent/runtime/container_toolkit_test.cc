#include "agent/runtime/container_toolkit.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "agent/test_util.h"

namespace gpurent::agent {
namespace {

using testing::TempDir;

TEST(ContainerToolkit, ReadsTheVersionEachToolPrints) {
  const std::vector<std::pair<std::string, std::optional<ToolkitVersion>>> cases = {
      {"NVIDIA Container Toolkit CLI version 1.17.8\ncommit: "
       "f202b80a9b9d0db00d9b1d73c0128c8962c55f4d\n",
       ToolkitVersion{1, 17, 8}},
      {"cli-version: 1.17.7\nlib-version: 1.17.7\nbuild date: 2025-05-30T13:47+00:00\n",
       ToolkitVersion{1, 17, 7}},
      {"NVIDIA Container Runtime Hook version 1.18.0\ncommit: 5505e2f\n", ToolkitVersion{1, 18, 0}},
      {"NVIDIA CDI Hook version 1.19.0-rc.1\n", ToolkitVersion{1, 19, 0, true}},
      {"version v1.17.8\n", ToolkitVersion{1, 17, 8}},
      {"1.17.8", ToolkitVersion{1, 17, 8}},
      {"1.17", ToolkitVersion{1, 17, 0}},
      {"toolkit 1.17.8~rc1 (build)", ToolkitVersion{1, 17, 8, true}},
      {"toolkit 1.17.8-1 (the package's revision)", ToolkitVersion{1, 17, 8}},
      {"toolkit 1.17.8+cuda12", ToolkitVersion{1, 17, 8}},
      // A date or a hash before the version is not one.
      {"built 2025-05-30, commit a1.2.3, version 1.16.2\n", ToolkitVersion{1, 16, 2}},
      {"", std::nullopt},
      {"garbage", std::nullopt},
      {"version: unknown\ncommit: deadbeef\n", std::nullopt},
      {"1.2.3.4", std::nullopt},
      {"1.17.8abc", std::nullopt},
      {"12", std::nullopt},
      {"v.1.2", std::nullopt},
      {"99999999999999999999.1.1", std::nullopt},
  };
  for (const auto& [output, expected] : cases) {
    EXPECT_EQ(parse_toolkit_version(output), expected) << output;
  }
}

TEST(ContainerToolkit, VersionsOrderAsReleasesDo) {
  EXPECT_LT((ToolkitVersion{1, 17, 7}), (ToolkitVersion{1, 17, 8}));
  EXPECT_LT((ToolkitVersion{1, 17, 8, true}), (ToolkitVersion{1, 17, 8}));
  EXPECT_LT((ToolkitVersion{1, 17, 8}), (ToolkitVersion{1, 17, 9, true}));
  EXPECT_LT((ToolkitVersion{1, 9, 99}), (ToolkitVersion{1, 17, 0}));
  EXPECT_LT((ToolkitVersion{1, 99, 0}), (ToolkitVersion{2, 0, 0}));
  EXPECT_EQ(to_string(ToolkitVersion{1, 17, 8}), "1.17.8");
  EXPECT_EQ(to_string(ToolkitVersion{1, 18, 0, true}), "1.18.0 (pre-release)");
}

// The policy, by what the probe found: only 1.17.8 and later releases get GPU containers, unless
// the operator allows an unsafe toolkit, which the note then says.
TEST(ContainerToolkit, GpuContainersOnlyWithAToolkitOfAtLeast1178) {
  struct Case {
    const char* what;
    ToolkitProbe probe;
    bool allowed;
    std::string version;
    const char* note_has;  // "" = no note
  };
  const std::vector<Case> cases = {
      {"1.17.8", {true, ToolkitVersion{1, 17, 8}, ""}, true, "1.17.8", ""},
      {"1.18.0", {true, ToolkitVersion{1, 18, 0}, ""}, true, "1.18.0", ""},
      {"2.0.0", {true, ToolkitVersion{2, 0, 0}, ""}, true, "2.0.0", ""},
      {"1.17.7", {true, ToolkitVersion{1, 17, 7}, ""}, false, "1.17.7", "older than 1.17.8"},
      {"1.16.1", {true, ToolkitVersion{1, 16, 1}, ""}, false, "1.16.1", "CVE-2024-0132"},
      {"1.17.8-rc.1",
       {true, ToolkitVersion{1, 17, 8, true}, ""},
       false,
       "1.17.8 (pre-release)",
       "older than 1.17.8"},
      {"not installed", {false, std::nullopt, ""}, false, "", "not installed"},
      {"garbage", {true, std::nullopt, "nvidia-ctk"}, false, "", "`nvidia-ctk --version`"},
      {"one tool of several unreadable",
       {true, ToolkitVersion{1, 18, 0}, "nvidia-container-cli"},
       false,
       "1.18.0",
       "nvidia-container-cli"},
  };
  for (const Case& c : cases) {
    const model::ContainerToolkit toolkit = toolkit_policy(c.probe, false);
    EXPECT_EQ(toolkit.gpu_containers, c.allowed) << c.what;
    EXPECT_EQ(toolkit.version, c.version) << c.what;
    if (*c.note_has == '\0') {
      EXPECT_EQ(toolkit.note, "") << c.what;
    } else {
      EXPECT_NE(toolkit.note.find(c.note_has), std::string::npos) << c.what << ": " << toolkit.note;
      EXPECT_TRUE(toolkit.note.starts_with("containers get no GPUs here: ")) << toolkit.note;
    }
    // The operator's flag allows each, and says what it allowed.
    const model::ContainerToolkit unsafe = toolkit_policy(c.probe, true);
    EXPECT_TRUE(unsafe.gpu_containers) << c.what;
    if (!c.allowed) {
      EXPECT_TRUE(unsafe.note.starts_with("allowed by --allow-unsafe-container-toolkit: "))
          << unsafe.note;
    } else {
      EXPECT_EQ(unsafe.note, "") << c.what;
    }
  }
}

class ToolkitProbeTest : public ::testing::Test {
 protected:
  // An executable script that prints `output`.
  std::string tool(const std::string& name, const std::string& body) {
    const auto path = dir_.path() / name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path.string();
  }

  TempDir dir_;
};

TEST_F(ToolkitProbeTest, TheLowestVersionOfTheInstalledToolsCounts) {
  const auto probe = probe_container_toolkit(
      {tool("nvidia-ctk", "echo 'NVIDIA Container Toolkit CLI version 1.18.1'; echo 'commit: x'"),
       (dir_.path() / "nvidia-cdi-hook").string(),  // not installed
       tool("nvidia-container-cli", "printf 'cli-version: 1.17.7\\nlib-version: 1.17.7\\n'"),
       "gpurent-no-such-tool-on-path"});
  EXPECT_TRUE(probe.installed);
  EXPECT_EQ(probe.lowest, (ToolkitVersion{1, 17, 7}));
  EXPECT_EQ(probe.unreadable, "");
  EXPECT_FALSE(toolkit_policy(probe, false).gpu_containers);
}

TEST_F(ToolkitProbeTest, NothingInstalledIsNotInstalled) {
  const auto probe = probe_container_toolkit(
      {(dir_.path() / "nvidia-ctk").string(), "gpurent-no-such-tool-on-path"});
  EXPECT_FALSE(probe.installed);
  EXPECT_FALSE(probe.lowest);
}

TEST_F(ToolkitProbeTest, AToolThatSaysNoVersionOrHangsIsUnreadable) {
  const auto garbage =
      probe_container_toolkit({tool("nvidia-ctk", "echo 'usage: ...' >&2; exit 2")});
  EXPECT_TRUE(garbage.installed);
  EXPECT_FALSE(garbage.lowest);
  EXPECT_NE(garbage.unreadable.find("nvidia-ctk"), std::string::npos);

  const auto started = std::chrono::steady_clock::now();
  const auto hung = probe_container_toolkit({tool("nvidia-container-cli", "exec sleep 60")},
                                            std::chrono::milliseconds(300));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_TRUE(hung.installed);
  EXPECT_FALSE(hung.lowest);
  EXPECT_NE(hung.unreadable.find("nvidia-container-cli"), std::string::npos);
}

}  // namespace
}  // namespace gpurent::agent
