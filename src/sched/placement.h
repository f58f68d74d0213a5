// Placement: which node and which GPUs a request gets.
//
// Pure: a function of the capacity view and the request, with no I/O and no hidden state, so the
// controller, the simulator and the benchmarks all get the same answer for the same input. Ties
// are broken by node id, so results do not depend on the order the view was built in.
//
// Policy (the foundation's): best fit. Among nodes with enough free GPUs of the type, take the one
// with the fewest free, which keeps whole nodes free for large requests; on that node take the
// lowest-indexed free GPUs.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::sched {

struct FreeGpu {
  std::string_view uuid;
  int index = 0;
};

// The free GPUs of one type on one schedulable node.
struct NodeCapacity {
  std::string_view node_id;
  std::string_view gpu_type;
  std::vector<FreeGpu> free;  // any order
};

struct Request {
  std::string_view gpu_type;
  int gpu_count = 1;
};

struct Placement {
  std::string node_id;
  std::vector<std::string> gpus;  // UUIDs ordered by device index
};

std::optional<Placement> best_fit(std::span<const NodeCapacity> capacity, const Request& request);

}  // namespace gpurent::sched
