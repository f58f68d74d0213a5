#include "agent/runtime/container_toolkit.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <tuple>

#include "agent/tool_run.h"

namespace gpurent::agent {
namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The number at the start of `text`, advancing past it; nullopt when there is none.
std::optional<int> take_number(std::string_view& text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc()) return std::nullopt;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  return value;
}

// A version starting at the front of `text`, which a separator precedes.
std::optional<ToolkitVersion> version_at(std::string_view text) {
  ToolkitVersion version;
  const auto major = take_number(text);
  if (!major || text.empty() || text.front() != '.') return std::nullopt;
  text.remove_prefix(1);
  const auto minor = take_number(text);
  if (!minor) return std::nullopt;
  version.major = *major;
  version.minor = *minor;
  if (!text.empty() && text.front() == '.') {
    text.remove_prefix(1);
    const auto patch = take_number(text);
    if (!patch) return std::nullopt;
    version.patch = *patch;
  }
  if (text.empty()) return version;
  const char next = text.front();
  // "-rc.1", "~rc1": a pre-release; "+build", "-1" (a package revision) and the end of a word are
  // not. Anything else glued to it ("1.2.3abc", "1.2.3.4") is no version.
  if ((next == '-' || next == '~') && text.size() > 1 &&
      std::isalpha(static_cast<unsigned char>(text[1]))) {
    version.prerelease = true;
  } else if (next != '-' && next != '+' && next != ',' && next != ')' &&
             !std::isspace(static_cast<unsigned char>(next))) {
    return std::nullopt;
  }
  return version;
}

// Runs `tool --version`, stdout and stderr together: its output, "" when it took longer than
// `timeout`, nullopt when the tool cannot be run (not there).
std::optional<std::string> version_output(const std::string& tool,
                                          std::chrono::milliseconds timeout) {
  auto ran = run_tool({.argv = {tool, "--version"}, .env = {}, .timeout = timeout});
  if (!ran) return std::nullopt;
  return ran->timed_out ? std::string() : std::move(ran->output);
}

}  // namespace

std::strong_ordering ToolkitVersion::operator<=>(const ToolkitVersion& other) const {
  if (const auto order =
          std::tie(major, minor, patch) <=> std::tie(other.major, other.minor, other.patch);
      order != 0) {
    return order;
  }
  // A pre-release comes before its release.
  return other.prerelease <=> prerelease;
}

std::optional<ToolkitVersion> parse_toolkit_version(std::string_view output) {
  for (size_t at = 0; at < output.size(); ++at) {
    if (!is_digit(output[at])) continue;
    const bool separated = at == 0 || std::isspace(static_cast<unsigned char>(output[at - 1])) ||
                           output[at - 1] == ':' || output[at - 1] == 'v' || output[at - 1] == 'V';
    if (separated) {
      if (auto version = version_at(output.substr(at))) return version;
    }
    while (at + 1 < output.size() && !std::isspace(static_cast<unsigned char>(output[at + 1]))) {
      ++at;  // past the rest of this word
    }
  }
  return std::nullopt;
}

std::string to_string(const ToolkitVersion& version) {
  return fmt::format("{}.{}.{}{}", version.major, version.minor, version.patch,
                     version.prerelease ? " (pre-release)" : "");
}

ToolkitProbe probe_container_toolkit(const std::vector<std::string>& tools,
                                     std::chrono::milliseconds timeout) {
  ToolkitProbe probe;
  for (const std::string& tool : tools) {
    const auto output = version_output(tool, timeout);
    if (!output) continue;
    probe.installed = true;
    const auto version = parse_toolkit_version(*output);
    if (!version) {
      if (probe.unreadable.empty()) probe.unreadable = tool;
      continue;
    }
    if (!probe.lowest || *version < *probe.lowest) probe.lowest = version;
  }
  return probe;
}

model::ContainerToolkit toolkit_policy(const ToolkitProbe& probe, bool allow_unsafe) {
  model::ContainerToolkit toolkit;
  if (probe.lowest) toolkit.version = to_string(*probe.lowest);
  std::string why_not;
  if (!probe.installed) {
    why_not =
        "the NVIDIA Container Toolkit is not installed (no nvidia-ctk, nvidia-container-cli "
        "or hook on PATH)";
  } else if (!probe.unreadable.empty()) {
    why_not = fmt::format("`{} --version` names no version", probe.unreadable);
  } else if (!probe.lowest) {
    why_not = "no tool of the NVIDIA Container Toolkit names its version";
  } else if (*probe.lowest < kMinimumToolkit) {
    why_not = fmt::format(
        "NVIDIA Container Toolkit {} is older than {}, which fixes container escapes through its "
        "hooks (CVE-2025-23266, CVE-2024-0132)",
        toolkit.version, to_string(kMinimumToolkit));
  }
  if (why_not.empty()) {
    toolkit.gpu_containers = true;
  } else if (allow_unsafe) {
    toolkit.gpu_containers = true;
    toolkit.note = fmt::format("allowed by --allow-unsafe-container-toolkit: {}", why_not);
  } else {
    toolkit.note = fmt::format("containers get no GPUs here: {}", why_not);
  }
  return toolkit;
}

}  // namespace gpurent::agent
