#include "sim/replay.h"

#include <gtest/gtest.h>

#include "common/random.h"

namespace gpurent::sim {
namespace {

SimInput input(const std::string& nodes_csv, const std::string& work_csv) {
  auto nodes = parse_csv(nodes_csv, "NODES.csv");
  auto work = parse_csv(work_csv, "WORK.csv");
  EXPECT_TRUE(nodes && work);
  auto node_specs = nodes_from_csv(*nodes);
  auto items = work_from_csv(*work);
  EXPECT_TRUE(node_specs) << node_specs.error().message;
  EXPECT_TRUE(items) << items.error().message;
  return {*node_specs, *items};
}

const std::string kTwoNodes =
    "name,gpu_type,gpu_count,cpu,memory_gb,nvlink_domains,fabric\n"
    "a,h100-80g,8,64,512,1,ib-1\n"
    "b,h100-80g,8,64,512,1,ib-1\n";

TEST(Replay, QueuesPreemptsAndReportsWaits) {
  const auto sim = input(kTwoNodes,
                         "id,arrival_s,duration_s,gpu_type,gpu_count,gpu_milli,cpu,memory_gb,"
                         "pricing,nodes,tenant\n"
                         // Spot work fills one node, two GPU shares go to the other...
                         "spot,0,1000,h100-80g,8,,8,64,spot,1,alice\n"
                         "half,10,100,h100-80g,1,500,1,8,on-demand,1,bob\n"
                         "other-half,10,100,h100-80g,1,500,1,8,on-demand,1,bob\n"
                         // ...so a whole node for on-demand work means preempting the spot work.
                         "big,20,50,h100-80g,8,,8,64,on-demand,1,bob\n"
                         // A gang of both nodes waits until the shares and "big" are gone.
                         "gang,30,50,h100-80g,8,,8,64,on-demand,2,bob\n"
                         "never,40,,h100-80g,8,,200,64,on-demand,1,bob\n");
  auto report = run_replay(sim, {.seed = 7});
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->mode, "replay");
  EXPECT_EQ(report->work_items, 6);
  // "never" asks for more CPU than any node has.
  EXPECT_EQ(report->placed, 5);
  EXPECT_EQ(report->failed, 1);
  EXPECT_EQ(report->preempted, 1);
  EXPECT_GT(report->invariant_checks, 10);
  ASSERT_TRUE(report->wait_s);
  EXPECT_GE(report->wait_s->p99, 80);  // the gang waited from 30 s to 110 s
  EXPECT_EQ(report->wait_s->p50, 0);
  ASSERT_TRUE(report->gpu_allocation_pct_time_averaged);
  EXPECT_GT(*report->gpu_allocation_pct_time_averaged, 0);
  EXPECT_EQ(report->gpu_allocation_pct, 0);  // everything that ran has left
  // Deterministic, byte for byte.
  auto again = run_replay(sim, {.seed = 7});
  ASSERT_TRUE(again);
  EXPECT_EQ(to_json(*report, false).dump(), to_json(*again, false).dump());
}

TEST(Replay, RandomWorkloadsKeepEveryInvariant) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Rng rng(seed);
    std::string work =
        "id,arrival_s,duration_s,gpu_type,gpu_count,gpu_milli,cpu,memory_gb,pricing,nodes,tenant\n";
    for (int i = 0; i < 120; ++i) {
      const auto shape = rng.uniform(6);
      const int gpus = shape < 2 ? 1 : shape < 4 ? 2 : shape == 4 ? 4 : 8;
      const bool shared = shape == 0 && rng.uniform(2) == 0;
      const bool gang = shape == 5 && rng.uniform(3) == 0;
      work += fmt::format("w{},{},{},h100-80g,{},{},{},{},{},{},t{}\n", i, rng.uniform(2000),
                          rng.uniform(4) == 0 ? "" : std::to_string(1 + rng.uniform(900)), gpus,
                          shared ? "250" : "", 1 + rng.uniform(8), 8,
                          rng.uniform(3) == 0 ? "spot" : "on-demand", gang ? 2 : 1, rng.uniform(3));
    }
    std::string nodes = "name,gpu_type,gpu_count,cpu,memory_gb,nvlink_domains,fabric\n";
    for (int n = 0; n < 6; ++n) {
      nodes += fmt::format("node-{},h100-80g,8,64,512,{},ib-{}\n", n, 1 + n % 2, n % 2);
    }
    const auto sim = input(nodes, work);
    auto report = run_replay(sim, {.seed = seed});
    ASSERT_TRUE(report) << "seed " << seed << ": " << report.error().message;
    EXPECT_EQ(report->placed + report->failed, 120);
  }
}

}  // namespace
}  // namespace gpurent::sim
