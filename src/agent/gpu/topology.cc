#include "agent/gpu/topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <functional>
#include <map>

namespace gpurent::agent {
namespace {

// Connected components of `joined` among the GPUs for which `eligible` holds (the others get -1),
// numbered by their lowest GPU index.
std::vector<int> components(size_t count, const std::function<bool(size_t, size_t)>& joined,
                            const std::function<bool(size_t)>& eligible) {
  std::vector<int> group(count, -1);
  int next = 0;
  for (size_t first = 0; first < count; ++first) {
    if (group[first] != -1 || !eligible(first)) continue;
    std::vector<size_t> frontier = {first};
    group[first] = next;
    while (!frontier.empty()) {
      const size_t i = frontier.back();
      frontier.pop_back();
      for (size_t j = 0; j < count; ++j) {
        if (group[j] == -1 && j != i && joined(i, j)) {
          group[j] = next;
          frontier.push_back(j);
        }
      }
    }
    ++next;
  }
  return group;
}

bool square(size_t count, const auto& matrix) {
  return matrix.size() == count && std::all_of(matrix.begin(), matrix.end(), [&](const auto& row) {
           return row.size() == count;
         });
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_hex(std::string_view text, size_t min, size_t max) {
  return text.size() >= min && text.size() <= max &&
         std::all_of(text.begin(), text.end(), [](char c) { return std::isxdigit(c); });
}

}  // namespace

std::vector<int> nvlink_domains(size_t count, const std::vector<std::vector<bool>>& nvlinked) {
  if (!square(count, nvlinked)) return std::vector<int>(count, -1);
  return components(
      count, [&](size_t i, size_t j) { return nvlinked[i][j] || nvlinked[j][i]; },
      [](size_t) { return true; });
}

std::vector<int> pcie_switch_groups(size_t count, const std::vector<std::vector<int>>& levels) {
  if (!square(count, levels)) return std::vector<int>(count, -1);
  const auto below_host_bridge = [&](size_t i, size_t j) {
    const int level = levels[i][j] != kTopologyUnknown ? levels[i][j] : levels[j][i];
    return level != kTopologyUnknown && level <= kTopologyMultiple;
  };
  // A lone GPU is trivially its own group; among several, one that NVML could not place against
  // any other is unknown rather than alone.
  const auto placed = [&](size_t i) {
    if (count == 1) return true;
    for (size_t j = 0; j < count; ++j) {
      if (j != i && (levels[i][j] != kTopologyUnknown || levels[j][i] != kTopologyUnknown)) {
        return true;
      }
    }
    return false;
  };
  return components(count, below_host_bridge, placed);
}

std::vector<std::vector<bool>> nvlink_matrix(
    const std::vector<std::string>& bus_ids,
    const std::vector<std::vector<std::string>>& far_ends) {
  const size_t count = bus_ids.size();
  std::vector<std::vector<bool>> joined(count, std::vector<bool>(count, false));
  std::map<std::string, size_t> gpu_by_bus;
  for (size_t i = 0; i < count; ++i) gpu_by_bus.emplace(lower(bus_ids[i]), i);
  std::map<std::string, std::vector<size_t>> gpus_by_switch;
  for (size_t i = 0; i < count && i < far_ends.size(); ++i) {
    for (const auto& end : far_ends[i]) {
      const std::string key = lower(end);
      if (const auto gpu = gpu_by_bus.find(key); gpu != gpu_by_bus.end()) {
        joined[i][gpu->second] = joined[gpu->second][i] = gpu->second != i;
      } else {
        gpus_by_switch[key].push_back(i);
      }
    }
  }
  for (const auto& [_, gpus] : gpus_by_switch) {
    for (size_t a : gpus) {
      for (size_t b : gpus) joined[a][b] = a != b;
    }
  }
  return joined;
}

std::string sysfs_pci_address(std::string_view nvml_bus_id) {
  const size_t first = nvml_bus_id.find(':');
  const size_t second = nvml_bus_id.find(':', first + 1);
  const size_t dot = nvml_bus_id.rfind('.');
  if (first == std::string_view::npos || second == std::string_view::npos ||
      dot == std::string_view::npos || dot < second) {
    return "";
  }
  const std::string_view domain = nvml_bus_id.substr(0, first);
  const std::string_view bus = nvml_bus_id.substr(first + 1, second - first - 1);
  const std::string_view device = nvml_bus_id.substr(second + 1, dot - second - 1);
  const std::string_view function = nvml_bus_id.substr(dot + 1);
  if (!is_hex(domain, 4, 8) || !is_hex(bus, 2, 2) || !is_hex(device, 2, 2) ||
      !is_hex(function, 1, 1)) {
    return "";
  }
  // The kernel prints the domain with at least four digits (Intel VMD domains have five).
  uint32_t domain_number = 0;
  std::from_chars(domain.data(), domain.data() + domain.size(), domain_number, 16);
  return lower(fmt::format("{:04x}:{}:{}.{}", domain_number, bus, device, function));
}

int pci_numa_node(std::string_view nvml_bus_id, const std::filesystem::path& sysfs_root) {
  const std::string address = sysfs_pci_address(nvml_bus_id);
  if (address.empty()) return -1;
  std::ifstream file(sysfs_root / "bus" / "pci" / "devices" / address / "numa_node");
  int node = -1;
  if (!(file >> node) || node < 0) return -1;
  return node;
}

}  // namespace gpurent::agent
