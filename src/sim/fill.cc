#include "sim/fill.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/random.h"

namespace gpurent::sim {
namespace {

// A request's demand and the GPU types it accepts (sorted), as the profile counts them.
using Shape = std::tuple<int, int, int64_t, int64_t, int64_t, int64_t, std::vector<std::string>>;

Shape shape_of(const sched::Request& request) {
  const auto& d = request.per_node;
  auto types = request.gpu_types;
  std::sort(types.begin(), types.end());
  return {d.gpu_count, d.gpu_milli, d.gpu_memory_mib, d.cpu_milli, d.memory_mib, d.disk_gb, types};
}

sched::ProfileEntry entry_of(const Shape& s, double weight) {
  return {.demand = {.gpu_count = std::get<0>(s),
                     .gpu_milli = std::get<1>(s),
                     .gpu_memory_mib = std::get<2>(s),
                     .cpu_milli = std::get<3>(s),
                     .memory_mib = std::get<4>(s),
                     .disk_gb = std::get<5>(s)},
          .gpu_types = std::get<6>(s),
          .weight = weight};
}

double pct(double part, int64_t whole) { return 100.0 * part / static_cast<double>(whole); }

Error invariant_error(const WorkItem& item, size_t step, const Error& broken) {
  return {ErrorKind::kInternal, "invariant_violated",
          fmt::format("after offering '{}' (step {}): {}", item.id, step + 1, broken.message)};
}

}  // namespace

std::vector<uint32_t> fill_sequence(std::span<const WorkItem> items, int64_t gpu_milli_capacity,
                                    const FillOptions& options) {
  std::vector<uint32_t> sequence(items.size());
  int64_t requested = 0;
  for (uint32_t i = 0; i < items.size(); ++i) {
    sequence[i] = i;
    requested += items[i].gpu_milli();
  }
  Rng rng(options.seed);
  const auto target =
      static_cast<int64_t>(std::ceil(options.fill * static_cast<double>(gpu_milli_capacity)));
  // Ends: every draw adds a GPU item with positive probability, and the target is bounded by
  // kMaxFill × capacity.
  if (requested > 0) {
    while (requested < target) {
      const auto i = static_cast<uint32_t>(rng.uniform(items.size()));
      sequence.push_back(i);
      requested += items[i].gpu_milli();
    }
  }
  if (options.shuffle) {
    // Fisher-Yates from the back, on the same generator: one seed fixes the whole sequence.
    for (size_t i = sequence.size(); i > 1; --i) {
      std::swap(sequence[i - 1], sequence[rng.uniform(i)]);
    }
  }
  return sequence;
}

std::vector<sched::ProfileEntry> workload_profile(std::span<const WorkItem> items, double coverage,
                                                  sched::Policy policy) {
  std::map<Shape, int64_t> counts;
  for (const WorkItem& item : items) {
    if (item.request.per_node.gpu_count > 0) ++counts[shape_of(item.request)];
  }
  // In shape order (the map's), which breaks ties in frequency independently of the input order.
  std::vector<sched::ProfileEntry> counted;
  for (const auto& [shape, count] : counts) {
    counted.push_back(entry_of(shape, static_cast<double>(count)));
  }
  auto profile = sched::most_common_shapes(std::move(counted), coverage,
                                           std::numeric_limits<size_t>::max(), policy);
  double covered = 0;
  for (const auto& entry : profile) covered += entry.weight;
  for (auto& entry : profile) entry.weight /= covered;
  return profile;
}

Result<SimReport> run_fill(sched::Cluster& cluster, std::span<const WorkItem> items,
                           const FillOptions& options) {
  if (!(options.fill > 0 && options.fill <= kMaxFill)) {
    return fail(Error::invalid("invalid_fill", fmt::format("fill must be in (0, {}]", kMaxFill)));
  }
  if (!(options.profile_coverage > 0 && options.profile_coverage <= 1)) {
    return fail(Error::invalid("invalid_coverage", "profile coverage must be in (0, 1]"));
  }
  const sched::ClusterStats start = cluster.stats();
  const int64_t capacity = start.gpu_milli_total;
  if (capacity == 0) {
    return fail(Error::unprocessable("no_gpus", "the cluster has no schedulable GPUs to fill"));
  }

  SimReport report{.mode = "fill",
                   .policy = std::string(sched::to_string(cluster.policy())),
                   .seed = options.seed,
                   .fill = options.fill,
                   .shuffle = options.shuffle,
                   .nodes = start.nodes,
                   .gpu_milli_capacity = capacity,
                   .work_items = static_cast<int64_t>(items.size())};
  std::vector<sched::ProfileEntry> profile =
      workload_profile(items, options.profile_coverage, cluster.policy());
  report.profile_shapes = static_cast<int64_t>(profile.size());
  cluster.set_profile(std::move(profile));

  const std::vector<uint32_t> sequence = fill_sequence(items, capacity, options);
  report.decisions = static_cast<int64_t>(sequence.size());
  std::chrono::steady_clock::duration placing{};
  std::chrono::steady_clock::duration refusing{};
  int64_t arrived = 0;
  int next_pct = 1;
  for (size_t step = 0; step < sequence.size(); ++step) {
    const WorkItem& item = items[sequence[step]];
    const auto began = std::chrono::steady_clock::now();
    Result<sched::Assignment> assignment = cluster.place(item.request);
    Status allocated;
    if (assignment) allocated = cluster.allocate(*assignment);
    (assignment ? placing : refusing) += std::chrono::steady_clock::now() - began;
    if (!allocated) {
      return fail(
          invariant_error(item, step,
                          Error::internal("place() chose resources that allocate() refused: " +
                                          allocated.error().message)));
    }
    assignment ? ++report.placed : ++report.failed;
    // The nodes the decision changed after every decision, the whole cluster now and then and
    // after the last: a full check costs O(nodes), too much for every decision of a large run.
    const bool whole = (step + 1) % kWholeClusterCheckEvery == 0 || step + 1 == sequence.size();
    Status valid = whole        ? cluster.check_invariants()
                   : assignment ? cluster.check_invariants(*assignment)
                                : Status{};
    if (!valid) return fail(invariant_error(item, step, valid.error()));
    ++report.invariant_checks;

    arrived += item.gpu_milli();
    if (arrived * 100 < int64_t{next_pct} * capacity) continue;
    const sched::ClusterStats now = cluster.stats();
    // One item may cross several percents (a large gang on a small cluster): each gets a point.
    for (; arrived * 100 >= int64_t{next_pct} * capacity; ++next_pct) {
      report.curve.push_back({.arrived_pct = next_pct,
                              .allocated_gpu_pct = pct(now.gpu_milli_allocated, capacity),
                              .fragmented_gpu_pct = pct(now.gpu_milli_fragmented, capacity)});
      if (next_pct == 100) {
        report.unallocated_gpu_pct_at_100 = 100 - pct(now.gpu_milli_allocated, capacity);
        report.fragmented_gpu_pct = pct(now.gpu_milli_fragmented, capacity);
      }
    }
  }
  report.gpu_allocation_pct = pct(cluster.stats().gpu_milli_allocated, capacity);
  const auto seconds = [](std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double>(d).count();
  };
  const double deciding = seconds(placing) + seconds(refusing);
  report.decisions_per_sec = deciding > 0 ? static_cast<double>(report.decisions) / deciding : 0;
  const auto mean_us = [&](std::chrono::steady_clock::duration d,
                           int64_t count) -> std::optional<double> {
    if (count == 0) return std::nullopt;
    return seconds(d) * 1e6 / static_cast<double>(count);
  };
  report.placed_decision_us = mean_us(placing, report.placed);
  report.refused_decision_us = mean_us(refusing, report.failed);
  return report;
}

Result<sched::Cluster> make_cluster(std::span<const sched::NodeSpec> nodes, sched::Policy policy) {
  sched::Cluster cluster(policy);
  for (const sched::NodeSpec& spec : nodes) {
    GPURENT_TRY(handle, cluster.upsert_node(spec));
    static_cast<void>(handle);
  }
  return cluster;
}

}  // namespace gpurent::sim
