// The NVIDIA Container Toolkit on this node: which version its tools say they are, and whether the
// agent gives containers GPUs with it.
//
// The toolkit's hooks run on the host, as root, while a container is being made, and read the
// container's image; flaws in them have let an image reach the host: CVE-2024-0132 (up to 1.16.1)
// and CVE-2025-23266 (up to 1.17.7). Tenants choose the images, so the agent gives containers GPUs
// only with a toolkit of kMinimumToolkit or later (docs/runtime.md, "Hardening").
//
// probe_container_toolkit() asks each of the toolkit's tools that is installed for its version
// (`<tool> --version`); the lowest counts, since the hook that runs may be any of them.
// toolkit_policy() decides from what was found. Run once, at the agent's start.
//
// Thread-safety: all functions are reentrant.
#pragma once

#include <chrono>
#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/node.h"

namespace gpurent::agent {

struct ToolkitVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  bool prerelease = false;  // "1.17.8-rc.1": before 1.17.8
  std::strong_ordering operator<=>(const ToolkitVersion& other) const;
  bool operator==(const ToolkitVersion& other) const = default;
};

// The oldest release with the fixes named above (NVIDIA's bulletins; raise it with the next one).
inline constexpr ToolkitVersion kMinimumToolkit{1, 17, 8};

// The tools asked, by name on PATH: the CLI, the CDI hook, the legacy runtime hook (and its older
// name) and libnvidia-container's CLI.
inline const std::vector<std::string> kToolkitTools = {
    "nvidia-ctk", "nvidia-cdi-hook", "nvidia-container-runtime-hook", "nvidia-container-toolkit",
    "nvidia-container-cli"};

// How long one tool may take to say its version.
inline constexpr std::chrono::seconds kToolkitProbeTimeout{5};

// The first version in a tool's `--version` output: "NVIDIA Container Toolkit CLI version
// 1.17.8", "cli-version: 1.17.8", "... version 1.18.0-rc.1" (a pre-release); MAJOR.MINOR or
// MAJOR.MINOR.PATCH, after a space, a ':' or a 'v', or at the start of the output. nullopt when
// there is none.
std::optional<ToolkitVersion> parse_toolkit_version(std::string_view output);

std::string to_string(const ToolkitVersion& version);

struct ToolkitProbe {
  bool installed = false;                // some tool ran
  std::optional<ToolkitVersion> lowest;  // the lowest version any said; nullopt: none readable
  std::string unreadable;                // a tool that ran and said no version ("" if none did)
};

// Runs `<tool> --version` for each tool (a name looked up on PATH, or a path); a tool that is not
// there is skipped, one that runs longer than `timeout` is killed and counts as unreadable.
ToolkitProbe probe_container_toolkit(const std::vector<std::string>& tools = kToolkitTools,
                                     std::chrono::milliseconds timeout = kToolkitProbeTimeout);

// What the node says of it (model::ContainerToolkit): GPU containers only with a version, no
// pre-release, of at least kMinimumToolkit; not when none is installed, one is older or a tool's
// version cannot be read. allow_unsafe (the operator's --allow-unsafe-container-toolkit) allows
// them anyway, and the note says so.
model::ContainerToolkit toolkit_policy(const ToolkitProbe& probe, bool allow_unsafe);

}  // namespace gpurent::agent
