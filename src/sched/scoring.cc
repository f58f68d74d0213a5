#include "sched/scoring.h"

#include <algorithm>
#include <limits>
#include <map>

namespace gpurent::sched {
namespace {

int64_t total_free_milli(const FreeCapacity& node) {
  int64_t total = 0;
  for (const auto& gpu : node.gpus) total += gpu.milli;
  return total;
}

bool fits_host_resources(const FreeCapacity& node, const NodeDemand& demand) {
  return demand.cpu_milli <= node.cpu_milli && demand.memory_mib <= node.memory_mib &&
         (!node.tracks_disk || demand.disk_gb <= node.disk_gb);
}

bool is_shared(const NodeDemand& demand, int milli) {
  return demand.gpu_count == 1 && milli < kMilliPerGpu;
}

// Fully free GPUs of a node by NVLink domain, each list in position order.
std::map<int, std::vector<const FreeGpuSlot*>> whole_free_by_domain(const FreeCapacity& node) {
  std::map<int, std::vector<const FreeGpuSlot*>> domains;
  for (const auto& gpu : node.gpus) {
    if (gpu.milli == kMilliPerGpu) domains[gpu.domain].push_back(&gpu);
  }
  for (auto& [domain, gpus] : domains) {
    std::sort(gpus.begin(), gpus.end(),
              [](const FreeGpuSlot* a, const FreeGpuSlot* b) { return a->position < b->position; });
  }
  return domains;
}

// k GPUs out of one domain's free ones: all under one PCIe switch when a switch has room (the
// fullest such switch, to keep emptier switches whole), else from the switches with most room.
std::vector<int> pick_in_domain(const std::vector<const FreeGpuSlot*>& free, int count) {
  std::map<int, std::vector<int>> by_switch;
  for (const auto* gpu : free) by_switch[gpu->pcie_switch].push_back(gpu->position);
  std::vector<std::vector<int>> switches;
  for (auto& [id, positions] : by_switch) switches.push_back(std::move(positions));
  // Stable: equal sizes keep switch-number order, so the choice is deterministic.
  std::stable_sort(switches.begin(), switches.end(),
                   [](const auto& a, const auto& b) { return a.size() < b.size(); });
  for (const auto& positions : switches) {
    if (static_cast<int>(positions.size()) >= count) {
      return {positions.begin(), positions.begin() + count};
    }
  }
  std::stable_sort(switches.begin(), switches.end(),
                   [](const auto& a, const auto& b) { return a.size() > b.size(); });
  std::vector<int> picked;
  for (const auto& positions : switches) {
    for (int position : positions) {
      if (static_cast<int>(picked.size()) == count) break;
      picked.push_back(position);
    }
  }
  return picked;
}

struct GpuPick {
  std::vector<int> positions;
  bool one_domain = true;
};

std::optional<GpuPick> pick_whole_gpus(const FreeCapacity& node, int count, Policy policy) {
  const auto domains = whole_free_by_domain(node);
  int available = 0;
  for (const auto& [domain, gpus] : domains) available += static_cast<int>(gpus.size());
  if (available < count) return std::nullopt;

  // One domain that holds the whole request: the fullest one that does (binpack keeps emptier
  // domains whole for larger requests), or the emptiest one (spread).
  const std::vector<const FreeGpuSlot*>* chosen = nullptr;
  for (const auto& [domain, gpus] : domains) {
    const auto size = gpus.size();
    if (static_cast<int>(size) < count) continue;
    if (!chosen || (policy != Policy::kSpread ? size < chosen->size() : size > chosen->size())) {
      chosen = &gpus;
    }
  }
  if (chosen) return GpuPick{pick_in_domain(*chosen, count), true};

  // Across domains: as few as possible, so the largest first.
  std::vector<const std::vector<const FreeGpuSlot*>*> order;
  for (const auto& [domain, gpus] : domains) order.push_back(&gpus);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* a, const auto* b) { return a->size() > b->size(); });
  GpuPick pick{{}, false};
  for (const auto* gpus : order) {
    for (const auto* gpu : *gpus) {
      if (static_cast<int>(pick.positions.size()) == count) break;
      pick.positions.push_back(gpu->position);
    }
  }
  return pick;
}

FreeCapacity after_taking(const FreeCapacity& node, const std::vector<int>& positions, int milli,
                          const NodeDemand& demand) {
  FreeCapacity after = node;
  for (auto& gpu : after.gpus) {
    if (std::find(positions.begin(), positions.end(), gpu.position) != positions.end()) {
      gpu.milli -= milli;
    }
  }
  after.cpu_milli -= demand.cpu_milli;
  after.memory_mib -= demand.memory_mib;
  if (after.tracks_disk) after.disk_gb -= demand.disk_gb;
  return after;
}

}  // namespace

std::optional<int> effective_gpu_milli(const NodeDemand& demand, int64_t gpu_memory_mib) {
  if (demand.gpu_count == 0) return 0;
  if (demand.gpu_memory_mib <= 0 || demand.gpu_milli >= kMilliPerGpu) return demand.gpu_milli;
  if (gpu_memory_mib <= 0 || demand.gpu_memory_mib > gpu_memory_mib) return std::nullopt;
  const int64_t share =
      (demand.gpu_memory_mib * kMilliPerGpu + gpu_memory_mib - 1) / gpu_memory_mib;
  return std::max(demand.gpu_milli, static_cast<int>(share));
}

int64_t host_copies(const FreeCapacity& node, const NodeDemand& demand) {
  int64_t copies = std::numeric_limits<int64_t>::max();
  if (demand.cpu_milli > 0) copies = std::min(copies, node.cpu_milli / demand.cpu_milli);
  if (demand.memory_mib > 0) copies = std::min(copies, node.memory_mib / demand.memory_mib);
  if (node.tracks_disk && demand.disk_gb > 0) {
    copies = std::min(copies, node.disk_gb / demand.disk_gb);
  }
  return copies;
}

namespace {

// The FGD paper's measure as its simulator computes it: when enough GPUs have the demand's share
// free and the node has its CPU (memory is not looked at), the free milli of the GPUs with less
// than the share; otherwise all of it.
int64_t paper_unusable_gpu_milli(const FreeCapacity& node, const NodeDemand& demand, int milli) {
  int usable = 0;
  int64_t unusable = 0;
  for (const auto& gpu : node.gpus) {
    if (gpu.milli >= milli) {
      ++usable;
    } else {
      unusable += gpu.milli;
    }
  }
  const bool satisfied = usable >= demand.gpu_count && demand.cpu_milli <= node.cpu_milli;
  return satisfied ? unusable : total_free_milli(node);
}

}  // namespace

int64_t unusable_gpu_milli(const FreeCapacity& node, const NodeDemand& demand, Policy policy) {
  if (demand.gpu_count == 0) return 0;
  const int64_t total = total_free_milli(node);
  const auto milli = effective_gpu_milli(demand, node.gpu_memory_mib);
  if (!milli) return total;
  if (policy == Policy::kFgd) return paper_unusable_gpu_milli(node, demand, *milli);
  if (!fits_host_resources(node, demand)) return total;
  if (is_shared(demand, *milli)) {
    int64_t unusable = 0;
    for (const auto& gpu : node.gpus) {
      if (gpu.milli < *milli) unusable += gpu.milli;
    }
    return unusable;
  }
  int64_t whole = 0;
  for (const auto& gpu : node.gpus) whole += gpu.milli == kMilliPerGpu;
  // Whole GPUs are usable only by as many copies as the free CPU/memory/disk beside them can
  // hold; the rest are stranded.
  const int64_t copies = std::min(whole / demand.gpu_count, host_copies(node, demand));
  return total - copies * demand.gpu_count * kMilliPerGpu;
}

double fragmentation(const FreeCapacity& node, std::span<const ProfileEntry> profile,
                     Policy policy) {
  double sum = 0;
  for (const auto& entry : profile) {
    // The paper's way with GPU types: a node of a type the entry does not accept is all
    // unusable for it. Binpack reads every entry's demand on every node instead: on the lists
    // that pin GPU models (bench/alibaba_variants.py) both the paper's way and skipping such
    // entries left more GPUs unallocated (bench/RESULTS.md, issue 29 part 2).
    const auto& types = entry.gpu_types;
    const bool accepted = policy != Policy::kFgd || types.empty() ||
                          std::find(types.begin(), types.end(), node.gpu_type) != types.end();
    const int64_t unusable =
        accepted ? unusable_gpu_milli(node, entry.demand, policy) : total_free_milli(node);
    sum += entry.weight * static_cast<double>(unusable);
  }
  return sum;
}

bool PlacementRank::better(const PlacementRank& a, const PlacementRank& b, Policy policy) {
  if (a.one_domain != b.one_domain) return a.one_domain;
  if (policy == Policy::kSpread) return a.free_milli_after > b.free_milli_after;
  if (a.fragmentation_delta != b.fragmentation_delta) {
    return a.fragmentation_delta < b.fragmentation_delta;
  }
  return a.free_milli_after < b.free_milli_after;
}

bool fits_node(const FreeCapacity& node, const NodeDemand& demand) {
  if (!fits_host_resources(node, demand)) return false;
  const auto milli = effective_gpu_milli(demand, node.gpu_memory_mib);
  if (!milli) return false;
  if (demand.gpu_count == 0) return true;
  if (is_shared(demand, *milli)) {
    return std::ranges::any_of(node.gpus,
                               [&](const FreeGpuSlot& gpu) { return gpu.milli >= *milli; });
  }
  return std::ranges::count_if(node.gpus, [](const FreeGpuSlot& gpu) {
           return gpu.milli == kMilliPerGpu;
         }) >= demand.gpu_count;
}

std::optional<NodeScore> score_node(const FreeCapacity& node, const NodeDemand& demand,
                                    Policy policy, std::span<const ProfileEntry> profile) {
  return score_node(node, demand, policy, [profile, policy](const FreeCapacity& free) {
    return fragmentation(free, profile, policy);
  });
}

std::optional<NodeScore> score_node(const FreeCapacity& node, const NodeDemand& demand,
                                    Policy policy, const FragmentationOf& fragmentation_of) {
  if (!fits_host_resources(node, demand)) return std::nullopt;
  const auto milli = effective_gpu_milli(demand, node.gpu_memory_mib);
  if (!milli) return std::nullopt;
  const bool binpack = policy != Policy::kSpread;  // packs by fragmentation (kFgd too)
  const double before = binpack ? fragmentation_of(node) : 0;
  auto scored = [&](std::vector<int> positions, bool one_domain) {
    std::sort(positions.begin(), positions.end());
    const auto after = after_taking(node, positions, *milli, demand);
    NodeScore score{std::move(positions), *milli, {one_domain, 0, total_free_milli(after)}};
    if (binpack) score.rank.fragmentation_delta = fragmentation_of(after) - before;
    return score;
  };

  if (demand.gpu_count == 0) return scored({}, true);
  if (is_shared(demand, *milli)) {
    // One candidate per distinct free level (GPUs at the same level are interchangeable; the
    // lowest position stands for them), scored by what taking from it does to fragmentation.
    std::map<int, int> level_to_position;
    for (const auto& gpu : node.gpus) {
      if (gpu.milli < *milli) continue;
      auto [it, inserted] = level_to_position.emplace(gpu.milli, gpu.position);
      if (!inserted) it->second = std::min(it->second, gpu.position);
    }
    std::optional<NodeScore> best;
    for (const auto& [level, position] : level_to_position) {
      auto candidate = scored({position}, true);
      // Among equal scores the fuller GPU (binpack, visited first) or the emptier one (spread).
      const bool wins = !best || NodeScore::better(candidate, *best, policy) ||
                        (!binpack && NodeScore::same(candidate, *best));
      if (wins) best = std::move(candidate);
    }
    return best;
  }
  auto pick = pick_whole_gpus(node, demand.gpu_count, policy);
  if (!pick) return std::nullopt;
  return scored(std::move(pick->positions), pick->one_domain || demand.gpu_count == 1);
}

}  // namespace gpurent::sched
