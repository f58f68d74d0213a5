#include "sim/fill.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace gpurent::sim {
namespace {

WorkItem pod(std::string id, int gpus, int gpu_milli = 1000, int64_t cpu_milli = 1000) {
  WorkItem item{.id = std::move(id)};
  item.request.per_node = {.gpu_count = gpus,
                           .gpu_milli = gpus > 0 ? gpu_milli : 1000,
                           .cpu_milli = cpu_milli,
                           .memory_mib = 1024};
  return item;
}

sched::NodeSpec node(std::string id, int gpus, int64_t cpu_milli = 64'000) {
  sched::NodeSpec spec{.id = std::move(id),
                       .gpu_type = gpus > 0 ? "t4" : "",
                       .cpu_milli = cpu_milli,
                       .memory_mib = 256 * 1024};
  for (int i = 0; i < gpus; ++i) spec.gpus.push_back({.index = i});
  return spec;
}

sched::Cluster cluster_of(std::vector<sched::NodeSpec> nodes,
                          sched::Policy policy = sched::Policy::kBinpack) {
  auto cluster = make_cluster(nodes, policy);
  EXPECT_TRUE(cluster.has_value()) << cluster.error().message;
  return std::move(*cluster);
}

int64_t requested(const std::vector<WorkItem>& items, const std::vector<uint32_t>& sequence) {
  int64_t sum = 0;
  for (const uint32_t i : sequence) sum += items[i].gpu_milli();
  return sum;
}

std::vector<WorkItem> mixed_items(int count) {
  std::vector<WorkItem> items;
  for (int i = 0; i < count; ++i) {
    const int gpus = i % 4;
    items.push_back(pod("p" + std::to_string(i), gpus, gpus == 1 ? 1000 - 250 * (i % 3) : 1000));
  }
  return items;
}

TEST(FillSequence, OffersEveryItemOnceThenDuplicatesUntilTheTarget) {
  const std::vector<WorkItem> items = {pod("a", 1), pod("b", 1, 500), pod("c", 0), pod("d", 2)};
  // The items already request 3.5 GPUs of 2: nothing is added, nothing removed.
  EXPECT_EQ(fill_sequence(items, 2000, {.fill = 1.0}), (std::vector<uint32_t>{0, 1, 2, 3}));

  const auto sequence = fill_sequence(items, 2000, {.fill = 3.0});
  ASSERT_GT(sequence.size(), 4u);
  EXPECT_TRUE(std::equal(sequence.begin(), sequence.begin() + 4,
                         std::vector<uint32_t>{0, 1, 2, 3}.begin()));
  EXPECT_GE(requested(items, sequence), 6000);
  // The last duplicate is the one that reached the target.
  auto before_last = sequence;
  before_last.pop_back();
  EXPECT_LT(requested(items, before_last), 6000);
}

TEST(FillSequence, IsDeterministicInTheSeedAndPinned) {
  const std::vector<WorkItem> items = mixed_items(50);
  const FillOptions options{.fill = 2.0, .shuffle = true, .seed = 42};
  EXPECT_EQ(fill_sequence(items, 20'000, options), fill_sequence(items, 20'000, options));
  EXPECT_NE(fill_sequence(items, 20'000, options),
            fill_sequence(items, 20'000, {.fill = 2.0, .shuffle = true, .seed = 43}));
  // Pinned (and checked against an independent splitmix64 in Python): rejection sampling draws
  // the same everywhere, so this sequence is the same on every platform and library version.
  const std::vector<WorkItem> three = {pod("a", 1), pod("b", 1), pod("c", 1)};
  EXPECT_EQ(fill_sequence(three, 1000, {.fill = 5.0, .seed = 42}),
            (std::vector<uint32_t>{0, 1, 2, 1, 1}));
  EXPECT_EQ(fill_sequence(three, 1000, {.fill = 5.0, .shuffle = true, .seed = 42}),
            (std::vector<uint32_t>{2, 1, 1, 0, 1}));
}

TEST(FillSequence, ShuffleReordersTheSameItems) {
  const std::vector<WorkItem> items = mixed_items(200);
  const auto plain = fill_sequence(items, 50'000, {.fill = 1.5, .seed = 7});
  const auto shuffled = fill_sequence(items, 50'000, {.fill = 1.5, .shuffle = true, .seed = 7});
  EXPECT_NE(plain, shuffled);
  auto a = plain, b = shuffled;
  std::ranges::sort(a);
  std::ranges::sort(b);
  EXPECT_EQ(a, b);
}

TEST(FillSequence, DoesNotDuplicateWorkWithoutGpus) {
  const std::vector<WorkItem> items = {pod("a", 0), pod("b", 0)};
  EXPECT_EQ(fill_sequence(items, 8000, {.fill = 1.3}).size(), 2u);
  EXPECT_TRUE(fill_sequence({}, 8000, {.fill = 1.3}).empty());
}

TEST(WorkloadProfile, WeightsShapesByFrequencyWithinTheCoverage) {
  std::vector<WorkItem> items = {pod("a1", 1), pod("a2", 1), pod("a3", 1), pod("b", 2),
                                 pod("c", 4),  pod("x1", 0), pod("x2", 0)};
  const auto full = workload_profile(items, 1.0);
  ASSERT_EQ(full.size(), 3u);  // CPU-only pods are not in it
  EXPECT_EQ(full[0].demand.gpu_count, 1);
  EXPECT_DOUBLE_EQ(full[0].weight, 0.6);
  EXPECT_EQ(full[1].demand.gpu_count, 2);  // equal counts: ordered by shape
  EXPECT_DOUBLE_EQ(full[1].weight, 0.2);
  EXPECT_EQ(full[2].demand.gpu_count, 4);
  EXPECT_EQ(full[0].demand.cpu_milli, 1000);
  EXPECT_EQ(full[0].demand.memory_mib, 1024);

  const auto most = workload_profile(items, 0.6);
  ASSERT_EQ(most.size(), 1u);
  EXPECT_DOUBLE_EQ(most[0].weight, 1.0);
  const auto two = workload_profile(items, 0.61);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_DOUBLE_EQ(two[0].weight, 0.75);

  std::ranges::reverse(items);
  const auto reversed = workload_profile(items, 1.0);
  ASSERT_EQ(reversed.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(reversed[i].demand.gpu_count, full[i].demand.gpu_count);
    EXPECT_DOUBLE_EQ(reversed[i].weight, full[i].weight);
  }
  EXPECT_TRUE(workload_profile({}, 0.99).empty());
}

// Two nodes of two GPUs; two one-GPU pods, then a two-GPU pod: 4 GPUs requested of 4.
const std::vector<WorkItem> kTwoSmallOneLarge = {pod("s1", 1), pod("s2", 1), pod("l", 2)};

TEST(RunFill, BinpackKeepsAWholeNodeForTheLargePod) {
  sched::Cluster cluster = cluster_of({node("n1", 2), node("n2", 2)});
  auto report = run_fill(cluster, kTwoSmallOneLarge, {.fill = 1.0});
  ASSERT_TRUE(report.has_value()) << report.error().message;
  EXPECT_EQ(report->mode, "fill");
  EXPECT_EQ(report->policy, "binpack");
  EXPECT_EQ(report->gpu_milli_capacity, 4000);
  EXPECT_EQ(report->decisions, 3);
  EXPECT_EQ(report->placed, 3);
  EXPECT_EQ(report->failed, 0);
  EXPECT_EQ(report->invariant_checks, 3);
  EXPECT_EQ(report->profile_shapes, 2);
  EXPECT_DOUBLE_EQ(*report->unallocated_gpu_pct_at_100, 0);
  EXPECT_DOUBLE_EQ(report->gpu_allocation_pct, 100);
  ASSERT_EQ(report->curve.size(), 100u);
  EXPECT_EQ(report->curve[24].arrived_pct, 25);
  EXPECT_DOUBLE_EQ(report->curve[24].allocated_gpu_pct, 25);
  EXPECT_DOUBLE_EQ(report->curve[49].allocated_gpu_pct, 50);
  EXPECT_DOUBLE_EQ(report->curve[50].allocated_gpu_pct, 100);  // 51 %: after the large pod
  for (const char* id : {"n1", "n2"}) {
    EXPECT_EQ(cluster.free_gpu_milli(*cluster.find(id)), (std::vector<int>{0, 0})) << id;
  }
}

TEST(RunFill, SpreadStrandsTheLargePod) {
  sched::Cluster cluster = cluster_of({node("n1", 2), node("n2", 2)}, sched::Policy::kSpread);
  auto report = run_fill(cluster, kTwoSmallOneLarge, {.fill = 1.0});
  ASSERT_TRUE(report.has_value()) << report.error().message;
  EXPECT_EQ(report->policy, "spread");
  EXPECT_EQ(report->placed, 2);
  EXPECT_EQ(report->failed, 1);
  EXPECT_DOUBLE_EQ(*report->unallocated_gpu_pct_at_100, 50);
  EXPECT_DOUBLE_EQ(report->gpu_allocation_pct, 50);
  // Each node has one GPU left: free, but no use to a two-GPU pod.
  EXPECT_DOUBLE_EQ(report->curve.back().allocated_gpu_pct, 50);
}

TEST(RunFill, BinpackPacksFractionsOnOneGpu) {
  sched::Cluster cluster = cluster_of({node("n1", 2)});
  const std::vector<WorkItem> items = {pod("h1", 1, 500), pod("h2", 1, 500)};
  auto report = run_fill(cluster, items, {.fill = 0.5});
  ASSERT_TRUE(report.has_value()) << report.error().message;
  EXPECT_EQ(report->placed, 2);
  auto free = cluster.free_gpu_milli(*cluster.find("n1"));
  std::ranges::sort(free);
  EXPECT_EQ(free, (std::vector<int>{0, 1000}));
  // Arrived workload only reached 50 %: there is no reading at 100 %.
  EXPECT_FALSE(report->unallocated_gpu_pct_at_100.has_value());
  EXPECT_FALSE(report->fragmented_gpu_pct.has_value());
  EXPECT_EQ(report->curve.size(), 50u);
}

TEST(RunFill, CpuOnlyPodsTakeCpuButAddNoArrivedWorkload) {
  sched::Cluster cluster = cluster_of({node("n1", 2, 4000)});
  const std::vector<WorkItem> items = {pod("cpu", 0, 1000, 4000), pod("gpu", 1, 1000, 1000)};
  auto report = run_fill(cluster, items, {.fill = 0.5});
  ASSERT_TRUE(report.has_value()) << report.error().message;
  EXPECT_EQ(report->placed, 1);
  EXPECT_EQ(report->failed, 1);  // no CPU left beside the GPUs
  EXPECT_EQ(report->curve.size(), 50u);
  EXPECT_DOUBLE_EQ(report->curve.back().allocated_gpu_pct, 0);
}

TEST(RunFill, RefusesBadOptionsAndClustersWithoutGpus) {
  sched::Cluster cluster = cluster_of({node("n1", 2)});
  EXPECT_EQ(run_fill(cluster, kTwoSmallOneLarge, {.fill = 0}).error().code, "invalid_fill");
  EXPECT_EQ(run_fill(cluster, kTwoSmallOneLarge, {.fill = kMaxFill + 1}).error().code,
            "invalid_fill");
  EXPECT_EQ(run_fill(cluster, kTwoSmallOneLarge, {.fill = 1, .profile_coverage = 0}).error().code,
            "invalid_coverage");
  sched::Cluster cpu_only = cluster_of({node("c1", 0)});
  EXPECT_EQ(run_fill(cpu_only, kTwoSmallOneLarge, {.fill = 1}).error().code, "no_gpus");
}

TEST(RunFill, SameInputsAndSeedGiveTheSameJson) {
  const std::vector<sched::NodeSpec> nodes = {node("n1", 8), node("n2", 4), node("n3", 2),
                                              node("n4", 1)};
  const std::vector<WorkItem> items = mixed_items(12);
  const auto run = [&](uint64_t seed) {
    sched::Cluster cluster = cluster_of(nodes);
    auto report = run_fill(cluster, items, {.fill = 1.3, .shuffle = true, .seed = seed});
    EXPECT_TRUE(report.has_value()) << report.error().message;
    return *report;
  };
  const SimReport first = run(42);
  EXPECT_EQ(first.placed + first.failed, first.decisions);
  EXPECT_EQ(first.invariant_checks, first.decisions);
  EXPECT_EQ(to_json(first, false).dump(), to_json(run(42), false).dump());

  const Json with_timing = to_json(first, true);
  EXPECT_TRUE(with_timing.contains("decisions_per_sec"));
  const Json without = to_json(first, false);
  EXPECT_FALSE(without.contains("decisions_per_sec"));
  EXPECT_EQ(without["invariants"]["result"], "ok");
  EXPECT_TRUE(without["wait_s"].is_null());  // replay only
  EXPECT_TRUE(without["gpu_allocation_pct_time_averaged"].is_null());
  EXPECT_EQ(without["preempted"], 0);
  EXPECT_EQ(without["gpus"], 15.0);
  EXPECT_GE(without["curve"].size(), 130u);
}

}  // namespace
}  // namespace gpurent::sim
