#include "sched/placement.h"

#include <algorithm>

namespace gpurent::sched {

std::optional<Placement> best_fit(std::span<const NodeCapacity> capacity, const Request& request) {
  if (request.gpu_count < 1) return std::nullopt;
  const NodeCapacity* best = nullptr;
  for (const auto& node : capacity) {
    if (node.gpu_type != request.gpu_type) continue;
    if (static_cast<int>(node.free.size()) < request.gpu_count) continue;
    if (!best || node.free.size() < best->free.size() ||
        (node.free.size() == best->free.size() && node.node_id < best->node_id)) {
      best = &node;
    }
  }
  if (!best) return std::nullopt;
  std::vector<FreeGpu> free = best->free;
  std::sort(free.begin(), free.end(),
            [](const FreeGpu& a, const FreeGpu& b) { return a.index < b.index; });
  Placement placement{std::string(best->node_id), {}};
  for (int i = 0; i < request.gpu_count; ++i) placement.gpus.emplace_back(free[i].uuid);
  return placement;
}

}  // namespace gpurent::sched
