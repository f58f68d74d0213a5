// The Alibaba GPU trace v2023 as the FGD paper uses it: the default pod list on the 1213 GPU
// nodes. The trace lives beside the repository (../shared/traces/alibaba-gpu-v2023, or
// $GPURENT_ALIBABA_TRACE); without it these tests skip.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include "common/random.h"
#include "sim/fill.h"

namespace gpurent::sim {
namespace {

namespace fs = std::filesystem;

// Unallocated GPU % at arrived = 100 % that the replay must stay below: the paper's FGD (mean of
// seeds 42-51; BestFit is 7.14). Seed 42 measures 4.43 (docs/simulate.md); the run is
// deterministic, so this guards against a change that makes placement worse.
constexpr double kMaxUnallocatedPct = 4.77;

std::optional<fs::path> trace_dir() {
  if (const char* dir = std::getenv("GPURENT_ALIBABA_TRACE")) return fs::path(dir);
  fs::path beside = fs::path(__FILE__).parent_path() / "../../../shared/traces/alibaba-gpu-v2023";
  if (fs::exists(beside / "openb_pod_list_default.csv")) return beside;
  return std::nullopt;
}

SimInput load_trace() {
  const auto dir = trace_dir();
  if (!dir) return {};
  auto input = load_alibaba_input((*dir / "openb_node_list_gpu_node.csv").string(),
                                  (*dir / "openb_pod_list_default.csv").string());
  EXPECT_TRUE(input.has_value()) << input.error().message;
  return input ? std::move(*input) : SimInput{};
}

TEST(AlibabaTrace, MapsAsTheReadmeCounts) {
  if (!trace_dir()) GTEST_SKIP() << "the Alibaba trace is not beside the repository";
  const SimInput input = load_trace();
  ASSERT_EQ(input.nodes.size(), 1213u);
  std::map<std::string, size_t> gpus_by_model;
  for (const auto& node : input.nodes) gpus_by_model[node.gpu_type] += node.gpus.size();
  EXPECT_EQ(gpus_by_model["G2"], 4392u);
  EXPECT_EQ(gpus_by_model["T4"], 842u);
  EXPECT_EQ(gpus_by_model["A10"], 2u);

  ASSERT_EQ(input.work.size(), 8152u);
  std::map<int, int> by_gpu_count;
  int sharing = 0;
  int64_t gpu_milli = 0;
  for (const WorkItem& pod : input.work) {
    ++by_gpu_count[pod.request.per_node.gpu_count];
    if (pod.request.per_node.gpu_milli < 1000) ++sharing;
    gpu_milli += pod.gpu_milli();
    EXPECT_TRUE(pod.request.gpu_types.empty());  // gpu_spec is empty throughout the default file
  }
  EXPECT_EQ(by_gpu_count[0], 1088);
  EXPECT_EQ(by_gpu_count[1], 6989);
  EXPECT_EQ(sharing, 3078);
  EXPECT_EQ(by_gpu_count[2], 16);
  EXPECT_EQ(by_gpu_count[4], 15);
  EXPECT_EQ(by_gpu_count[8], 44);
  EXPECT_EQ(gpu_milli, 6'086'800);  // 6086.8 GPUs
}

// The paper's procedure (fill 1.3, shuffled, seed 42), with the invariants checked after every
// placement.
TEST(AlibabaTrace, FillModeLeavesLessUnallocatedThanThePapersFgd) {
  if (!trace_dir()) GTEST_SKIP() << "the Alibaba trace is not beside the repository";
  const SimInput input = load_trace();
  auto cluster = make_cluster(input.nodes, sched::Policy::kBinpack);
  ASSERT_TRUE(cluster.has_value()) << cluster.error().message;
  const auto began = std::chrono::steady_clock::now();
  auto report = run_fill(*cluster, input.work, {.fill = 1.3, .shuffle = true, .seed = 42});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  ASSERT_TRUE(report.has_value()) << report.error().message;
  EXPECT_EQ(report->gpu_milli_capacity, 6'212'000);
  EXPECT_GE(report->decisions, 8152);
  EXPECT_EQ(report->placed + report->failed, report->decisions);
  EXPECT_EQ(report->invariant_checks, report->decisions);
  ASSERT_TRUE(report->unallocated_gpu_pct_at_100.has_value());
  EXPECT_LT(*report->unallocated_gpu_pct_at_100, kMaxUnallocatedPct);
  EXPECT_GE(report->curve.size(), 130u);
  RecordProperty("unallocated_gpu_pct_at_100", std::to_string(*report->unallocated_gpu_pct_at_100));
  RecordProperty("seconds", std::to_string(seconds));
}

double unallocated_pct(const SimInput& input, sched::Policy policy) {
  auto cluster = make_cluster(input.nodes, policy);
  EXPECT_TRUE(cluster.has_value()) << cluster.error().message;
  if (!cluster) return 100;
  const auto report = run_fill(*cluster, input.work, {.fill = 1.3, .shuffle = true, .seed = 42});
  EXPECT_TRUE(report.has_value()) << report.error().message;
  if (!report || !report->unallocated_gpu_pct_at_100) return 100;
  return *report->unallocated_gpu_pct_at_100;
}

// The default list with a third of its GPU pods pinned to one GPU model, drawn by the models'
// share of the cluster's GPUs (bench/alibaba_variants.py builds such lists for the benchmark).
SimInput pin_a_third(SimInput input) {
  std::map<std::string, uint64_t> gpus_by_model;
  uint64_t gpus = 0;
  for (const auto& node : input.nodes) {
    gpus_by_model[node.gpu_type] += node.gpus.size();
    gpus += node.gpus.size();
  }
  Rng rng(7);
  for (WorkItem& pod : input.work) {
    if (pod.request.per_node.gpu_count == 0 || rng.uniform(3) != 0) continue;
    uint64_t draw = rng.uniform(gpus);
    for (const auto& [model, count] : gpus_by_model) {
      if (draw < count) {
        pod.request.gpu_types = {model};
        break;
      }
      draw -= count;
    }
  }
  return input;
}

// Policy kFgd scores with the paper's measure as its simulator computes it (typed profile, no
// host bound); binpack must leave fewer GPUs unallocated on the default list and where pods pin
// GPU models.
TEST(AlibabaTrace, BinpackLeavesLessUnallocatedThanThePapersMeasure) {
  if (!trace_dir()) GTEST_SKIP() << "the Alibaba trace is not beside the repository";
  const SimInput input = load_trace();
  EXPECT_LT(unallocated_pct(input, sched::Policy::kBinpack),
            unallocated_pct(input, sched::Policy::kFgd));
  const SimInput pinned = pin_a_third(input);
  const double binpack = unallocated_pct(pinned, sched::Policy::kBinpack);
  const double fgd = unallocated_pct(pinned, sched::Policy::kFgd);
  EXPECT_LT(binpack, fgd);
  RecordProperty("pinned_binpack", std::to_string(binpack));
  RecordProperty("pinned_fgd", std::to_string(fgd));
}

}  // namespace
}  // namespace gpurent::sim
