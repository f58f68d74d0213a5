#include "sched/cluster.h"

#include <gtest/gtest.h>

#include <array>

#include "common/random.h"
#include "sched/scoring.h"

namespace gpurent::sched {
namespace {

NodeSpec node(std::string id, int gpus, std::string type = "h100-80g", int domains = 1) {
  NodeSpec spec{std::move(id), std::move(type), 81'920};
  for (int i = 0; i < gpus; ++i) spec.gpus.push_back({i, i * domains / gpus, i / 2, 0});
  spec.cpu_milli = 128'000;
  spec.memory_mib = 1'048'576;
  return spec;
}

Request whole(int count, std::vector<std::string> types = {"h100-80g"}) {
  Request request;
  request.gpu_types = std::move(types);
  request.per_node.gpu_count = count;
  return request;
}

Request shared(int milli) {
  Request request = whole(1);
  request.per_node.gpu_milli = milli;
  return request;
}

// An integer in [low, high].
int between(Rng& rng, int low, int high) {
  const uint64_t span = static_cast<uint64_t>(high) - static_cast<uint64_t>(low) + 1;
  return low + static_cast<int>(rng.uniform(span));
}

NodeAssignment take(Cluster& cluster, const Request& request) {
  auto placed = cluster.place(request);
  EXPECT_TRUE(placed) << placed.error().message;
  if (!placed) return {};
  EXPECT_TRUE(cluster.allocate(*placed));
  EXPECT_TRUE(cluster.check_invariants()) << cluster.check_invariants().error().message;
  return placed->nodes.at(0);
}

std::string node_of(const Cluster& cluster, const NodeAssignment& part) {
  return cluster.spec(part.node).id;
}

TEST(Cluster, BestFitTakesTheFullestNodeThatFitsAndTiesGoToTheLowestId) {
  Cluster cluster;
  for (auto id : {"n-c", "n-a", "n-b"}) ASSERT_TRUE(cluster.upsert_node(node(id, 8)));
  EXPECT_EQ(node_of(cluster, take(cluster, whole(2))), "n-a");
  EXPECT_EQ(node_of(cluster, take(cluster, whole(4))), "n-a");  // 6 free there: fullest fit
  EXPECT_EQ(node_of(cluster, take(cluster, whole(4))), "n-b");  // n-a has 2 left
  const auto last = take(cluster, whole(2));
  EXPECT_EQ(node_of(cluster, last), "n-a");
  EXPECT_EQ(last.gpus, (std::vector<int>{6, 7}));
}

TEST(Cluster, MultiGpuRequestsStayInOneNvlinkDomainAndPackTheFullerDomain) {
  Cluster cluster;
  ASSERT_TRUE(cluster.upsert_node(node("n-a", 8, "h100-80g", 2)));  // domains {0-3}, {4-7}
  const auto first = take(cluster, whole(2));
  EXPECT_EQ(first.gpus, (std::vector<int>{0, 1}));
  // Two left in domain 0, four in domain 1: a pair goes to the fuller domain 0.
  EXPECT_EQ(take(cluster, whole(2)).gpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(take(cluster, whole(4)).gpus, (std::vector<int>{4, 5, 6, 7}));
}

TEST(Cluster, PrefersANodeWithOneDomainFreeOverAFullerNodeThatWouldSplitTheRequest) {
  Cluster cluster;
  ASSERT_TRUE(cluster.upsert_node(node("n-a", 8, "h100-80g", 4)));  // four domains of two
  ASSERT_TRUE(cluster.upsert_node(node("n-b", 8, "h100-80g", 1)));
  // Fill n-a so that 4 GPUs are free but each in a different domain.
  ASSERT_TRUE(cluster.allocate({{{0, {0, 2, 4, 6}}}}));
  const auto placed = take(cluster, whole(4));
  EXPECT_EQ(node_of(cluster, placed), "n-b");
}

TEST(Cluster, SharedGpuRequestsPackOntoOneGpu) {
  Cluster cluster;
  ASSERT_TRUE(cluster.upsert_node(node("n-a", 2)));
  ASSERT_TRUE(cluster.upsert_node(node("n-b", 2)));
  const auto first = take(cluster, shared(500));
  const auto second = take(cluster, shared(300));
  EXPECT_EQ(node_of(cluster, first), node_of(cluster, second));
  EXPECT_EQ(first.gpus, second.gpus);
  EXPECT_EQ(cluster.free_gpu_milli(first.node)[first.gpus[0]], 200);
  // 200 left there is too little for 300: the next one opens a fresh GPU on the same node.
  const auto third = take(cluster, shared(300));
  EXPECT_EQ(node_of(cluster, third), node_of(cluster, first));
  EXPECT_NE(third.gpus, first.gpus);
}

TEST(Cluster, FragmentationAwareScoringKeepsWholeGpusForWholeGpuWork) {
  // Plain best fit would put the shared request on the fullest node, n-a, breaking its last
  // whole GPU; with a profile full of one-GPU requests it goes where a GPU is already broken.
  Cluster cluster;
  ASSERT_TRUE(cluster.upsert_node(node("n-a", 2)));
  ASSERT_TRUE(cluster.upsert_node(node("n-b", 4)));
  cluster.set_profile(
      {{.demand = whole(1).per_node, .weight = 10}, {.demand = shared(500).per_node, .weight = 1}});
  ASSERT_TRUE(cluster.allocate({{{0, {0}}}}));       // n-a: 1 whole GPU left
  ASSERT_TRUE(cluster.allocate({{{1, {0}, 600}}}));  // n-b: GPU 0 has 400 free
  const auto placed = take(cluster, shared(400));
  EXPECT_EQ(node_of(cluster, placed), "n-b");
  EXPECT_EQ(placed.gpus, (std::vector<int>{0}));
}

TEST(Cluster, CpuHungryWorkGoesWhereItStrandsNoGpus) {
  // Both nodes have 8 whole GPUs; the usual request takes one GPU and 12 cores. A one-GPU request
  // with 40 cores would leave n-a (96 cores) CPU for only 4 more usual requests beside 7 free
  // GPUs: 3 GPUs stranded. n-b has cores to spare, so it goes there, though n-a comes first by id.
  Cluster cluster;
  auto lean = node("n-a", 8);
  lean.cpu_milli = 96'000;
  auto rich = node("n-b", 8);
  rich.cpu_milli = 400'000;
  ASSERT_TRUE(cluster.upsert_node(lean));
  ASSERT_TRUE(cluster.upsert_node(rich));
  auto usual = whole(1);
  usual.per_node.cpu_milli = 12'000;
  cluster.set_profile({{.demand = usual.per_node, .weight = 1}});
  auto hungry = whole(1);
  hungry.per_node.cpu_milli = 40'000;
  EXPECT_EQ(node_of(cluster, take(cluster, hungry)), "n-b");
  // The usual request strands nothing on either node: best fit, the fuller n-b.
  EXPECT_EQ(node_of(cluster, take(cluster, usual)), "n-b");
}

TEST(Scoring, WholeGpusBeyondWhatTheHostCanFeedAreUnusable) {
  FreeCapacity free;
  for (int i = 0; i < 8; ++i) free.gpus.push_back({i == 7 ? 400 : 1000, i, 0, 0});
  free.cpu_milli = 30'000;
  free.memory_mib = 1'000'000;
  NodeDemand one_gpu{.gpu_count = 1, .cpu_milli = 12'000, .memory_mib = 1'000};
  EXPECT_EQ(host_copies(free, one_gpu), 2);
  // 7 whole GPUs, CPU for 2 copies: 5 whole GPUs and the 400 left on GPU 7 are unusable.
  EXPECT_EQ(unusable_gpu_milli(free, one_gpu), 5'400);
  NodeDemand two_gpus{.gpu_count = 2, .cpu_milli = 10'000};
  EXPECT_EQ(unusable_gpu_milli(free, two_gpus), 1'400);  // 3 copies: 6 GPUs (GPUs allow 3 too)
  two_gpus.cpu_milli = 15'000;
  EXPECT_EQ(unusable_gpu_milli(free, two_gpus), 3'400);  // 2 copies: 4 GPUs
  NodeDemand shared_one{.gpu_count = 1, .gpu_milli = 500, .cpu_milli = 12'000};
  EXPECT_EQ(unusable_gpu_milli(free, shared_one), 400);  // the paper's measure: GPU 7 only
  NodeDemand no_cpu{.gpu_count = 1};
  EXPECT_EQ(unusable_gpu_milli(free, no_cpu), 400);
  free.memory_mib = 500;  // not even one copy
  EXPECT_EQ(unusable_gpu_milli(free, one_gpu), 7'400);
}

TEST(Scoring, TheFgdPolicyMeasuresAsThePapersSimulator) {
  FreeCapacity free;
  for (int i = 0; i < 8; ++i) free.gpus.push_back({i == 7 ? 400 : 1000, i, 0, 0});
  free.cpu_milli = 30'000;
  free.memory_mib = 500;  // the paper's measure does not read memory
  free.gpu_type = "G2";
  const NodeDemand one_gpu{.gpu_count = 1, .cpu_milli = 12'000, .memory_mib = 1'000};
  // Whole GPUs count as usable as long as one copy has its CPU: only GPU 7's 400 is unusable.
  EXPECT_EQ(unusable_gpu_milli(free, one_gpu, Policy::kFgd), 400);
  EXPECT_EQ(unusable_gpu_milli(free, one_gpu, Policy::kBinpack), 7'400);
  const NodeDemand five_gpus{.gpu_count = 5, .cpu_milli = 1'000};
  EXPECT_EQ(unusable_gpu_milli(free, five_gpus, Policy::kFgd), 400);  // 2 whole GPUs stay usable
  const NodeDemand eight_gpus{.gpu_count = 8, .cpu_milli = 1'000};
  EXPECT_EQ(unusable_gpu_milli(free, eight_gpus, Policy::kFgd), 7'400);  // too few: all of it
  const NodeDemand cpu_hungry{.gpu_count = 1, .cpu_milli = 31'000};
  EXPECT_EQ(unusable_gpu_milli(free, cpu_hungry, Policy::kFgd), 7'400);

  // Typed profile entries: under kFgd a node of another type is all unusable for them; binpack
  // reads their demand on every node.
  const std::vector<ProfileEntry> profile{
      {.demand = {.gpu_count = 1, .cpu_milli = 1'000}, .gpu_types = {"T4"}, .weight = 2}};
  EXPECT_EQ(fragmentation(free, profile, Policy::kFgd), 2 * 7'400);
  EXPECT_EQ(fragmentation(free, profile, Policy::kBinpack), 2 * 400);
  free.gpu_type = "T4";
  EXPECT_EQ(fragmentation(free, profile, Policy::kFgd), 2 * 400);
}

TEST(Cluster, ProfilesMergeShapesThatDifferOnlyInTypesUnlessThePolicyReadsThem) {
  const NodeDemand one{.gpu_count = 1};
  const NodeDemand two{.gpu_count = 2};
  const std::vector<ProfileEntry> counted{{.demand = one, .gpu_types = {"T4"}, .weight = 3},
                                          {.demand = two, .gpu_types = {}, .weight = 4},
                                          {.demand = one, .gpu_types = {"G2"}, .weight = 2}};
  const auto merged = most_common_shapes(counted, 1.0, 10, Policy::kBinpack);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].demand, one);  // 5 in all, ahead of the 4 two-GPU requests
  EXPECT_EQ(merged[0].weight, 5);
  EXPECT_TRUE(merged[0].gpu_types.empty());
  const auto typed = most_common_shapes(counted, 1.0, 10, Policy::kFgd);
  ASSERT_EQ(typed.size(), 3u);
  EXPECT_EQ(typed[0].demand, two);
  EXPECT_EQ(typed[1].gpu_types, std::vector<std::string>{"T4"});
  Policy parsed = Policy::kBinpack;
  ASSERT_TRUE(parse_policy("fgd", &parsed));
  EXPECT_EQ(parsed, Policy::kFgd);
  EXPECT_EQ(to_string(parsed), "fgd");
}

TEST(Cluster, MostCommonShapesCoverTheAskedShareAndKeepTiesInOrder) {
  auto entry = [](int gpus, double weight) {
    return ProfileEntry{.demand = {.gpu_count = gpus}, .weight = weight};
  };
  const std::vector<ProfileEntry> counted{entry(1, 10), entry(2, 50), entry(4, 10), entry(8, 30)};
  auto gpus = [](const std::vector<ProfileEntry>& profile) {
    std::vector<int> out;
    for (const auto& e : profile) out.push_back(e.demand.gpu_count);
    return out;
  };
  EXPECT_EQ(gpus(most_common_shapes(counted, 0.5, 10)), (std::vector<int>{2}));
  EXPECT_EQ(gpus(most_common_shapes(counted, 0.8, 10)), (std::vector<int>{2, 8}));
  EXPECT_EQ(gpus(most_common_shapes(counted, 0.85, 10)), (std::vector<int>{2, 8, 1}));
  EXPECT_EQ(gpus(most_common_shapes(counted, 1.0, 10)), (std::vector<int>{2, 8, 1, 4}));
  EXPECT_EQ(gpus(most_common_shapes(counted, 1.0, 2)), (std::vector<int>{2, 8}));
  EXPECT_EQ(most_common_shapes(counted, 0.85, 10)[2].weight, 10);
  EXPECT_TRUE(most_common_shapes({}, 0.95, 10).empty());
}

TEST(Cluster, SpreadTakesTheEmptiestNode) {
  Cluster cluster(Policy::kSpread);
  ASSERT_TRUE(cluster.upsert_node(node("n-a", 8)));
  ASSERT_TRUE(cluster.upsert_node(node("n-b", 8)));
  EXPECT_EQ(node_of(cluster, take(cluster, whole(1))), "n-a");
  EXPECT_EQ(node_of(cluster, take(cluster, whole(1))), "n-b");
  EXPECT_EQ(node_of(cluster, take(cluster, whole(1))), "n-a");
}

TEST(Cluster, GangsGetAllNodesOrNoneAndPreferOneFabricGroup) {
  Cluster cluster;
  for (auto [id, fabric] : {std::pair{"n-1", "ib-a"},
                            {"n-2", "ib-b"},
                            {"n-3", "ib-b"},
                            {"n-4", "ib-a"},
                            {"n-5", "ib-b"}}) {
    auto spec = node(id, 8);
    spec.fabric_group = fabric;
    ASSERT_TRUE(cluster.upsert_node(spec));
  }
  Request gang = whole(8);
  gang.nodes = 3;
  auto placed = cluster.place(gang);
  ASSERT_TRUE(placed);
  ASSERT_EQ(placed->nodes.size(), 3u);
  for (const auto& part : placed->nodes) {
    EXPECT_EQ(cluster.spec(part.node).fabric_group, "ib-b");
    EXPECT_EQ(part.gpus.size(), 8u);
  }
  ASSERT_TRUE(cluster.allocate(*placed));
  gang.nodes = 3;  // only two nodes are left: nothing is taken
  const auto refused = cluster.place_or_explain(gang);
  ASSERT_TRUE(std::holds_alternative<Refusal>(refused));
  EXPECT_EQ(std::get<Refusal>(refused).constraint, "nodes");
  gang.nodes = 2;  // across fabric groups when no one group has room
  placed = cluster.place(gang);
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->nodes.size(), 2u);
}

TEST(Cluster, RefusalsNameTheConstraintAndTheFreeGpus) {
  Cluster cluster;
  ASSERT_TRUE(cluster.upsert_node(node("n-a", 8)));
  ASSERT_TRUE(cluster.allocate({{{0, {0, 1, 2, 3, 4}}}}));
  auto explain = [&](const Request& request) {
    auto result = cluster.place_or_explain(request);
    EXPECT_TRUE(std::holds_alternative<Refusal>(result));
    return std::holds_alternative<Refusal>(result) ? std::get<Refusal>(result) : Refusal{};
  };
  auto refusal = explain(whole(4));
  EXPECT_EQ(refusal.constraint, "gpu_count");
  EXPECT_EQ(refusal.free_gpus, 3);
  EXPECT_EQ(refusal.largest_free_on_one_node, 3);
  EXPECT_EQ(explain(whole(1, {"a100-80g"})).constraint, "gpu_type");
  auto hungry = whole(1);
  hungry.per_node.cpu_milli = 500'000;
  EXPECT_EQ(explain(hungry).constraint, "cpu");
  hungry.per_node.cpu_milli = 0;
  hungry.per_node.memory_mib = 4'000'000;
  EXPECT_EQ(explain(hungry).constraint, "memory");
  auto picky = whole(1);
  picky.node_selector = {{"region", "eu"}};
  EXPECT_EQ(explain(picky).constraint, "node_selector");
  const auto never = cluster.why_never_fits(whole(9));
  ASSERT_TRUE(never);
  EXPECT_EQ(never->constraint, "gpu_count");
  EXPECT_NE(never->message.find("the largest node has 8"), std::string::npos) << never->message;
  // Five of the node's GPUs are taken, and it may be cordoned: it can still hold 8 later.
  EXPECT_FALSE(cluster.why_never_fits(whole(8)));
  cluster.set_schedulable(0, false);
  EXPECT_FALSE(cluster.why_never_fits(whole(8)));
  const auto constraint_of = [&](const Request& request) {
    const auto why = cluster.why_never_fits(request);
    return why ? why->constraint : std::string("fits");
  };
  EXPECT_EQ(constraint_of(whole(1, {"a100-80g"})), "gpu_type");
  // The answer is kept per shape until a node joins: then asked again.
  ASSERT_TRUE(cluster.upsert_node(node("n-b", 8, "a100-80g")));
  EXPECT_EQ(constraint_of(whole(1, {"a100-80g"})), "fits");
  EXPECT_EQ(constraint_of(picky), "node_selector");
  hungry.per_node.memory_mib = 0;
  hungry.per_node.cpu_milli = 500'000;
  EXPECT_EQ(constraint_of(hungry), "cpu");
  auto gang = whole(8);
  gang.nodes = 2;
  EXPECT_EQ(constraint_of(gang), "nodes");
  EXPECT_NE(cluster.why_never_fits(gang).value_or(Refusal{}).message.find("1 node(s) can"),
            std::string::npos);
}

TEST(Cluster, LabelsAnyTypeAndGpuMemoryFilters) {
  Cluster cluster;
  auto small = node("n-a", 8, "rtx-4090");
  small.gpu_memory_mib = 24'576;
  small.labels = {{"region", "eu"}};
  ASSERT_TRUE(cluster.upsert_node(small));
  ASSERT_TRUE(cluster.upsert_node(node("n-b", 8)));
  Request big_memory = whole(1, {});
  big_memory.min_gpu_memory_mib = 40'000;
  EXPECT_EQ(node_of(cluster, take(cluster, big_memory)), "n-b");
  Request in_eu = whole(1, {});
  in_eu.node_selector = {{"region", "eu"}};
  EXPECT_EQ(node_of(cluster, take(cluster, in_eu)), "n-a");
  // A shared request asking for 16 GiB of GPU memory takes 2/3 of a 24 GiB GPU.
  Request shared_memory = shared(100);
  shared_memory.gpu_types = {"rtx-4090"};
  shared_memory.per_node.gpu_memory_mib = 16'384;
  const auto placed = take(cluster, shared_memory);
  EXPECT_EQ(placed.gpu_milli, 667);
}

TEST(Cluster, APinnedRequestGoesToItsNodeOrNowhere) {
  Cluster cluster;
  for (auto id : {"n-a", "n-b"}) ASSERT_TRUE(cluster.upsert_node(node(id, 8)));
  Request pinned = whole(2);
  pinned.node_id = "n-b";  // best fit alone would pick n-a
  EXPECT_EQ(node_of(cluster, take(cluster, pinned)), "n-b");
  EXPECT_EQ(node_of(cluster, take(cluster, pinned)), "n-b");
  pinned.per_node.gpu_count = 6;  // 4 left on n-b: it waits although n-a has room
  auto refused = cluster.place_or_explain(pinned);
  ASSERT_TRUE(std::holds_alternative<Refusal>(refused));
  EXPECT_EQ(std::get<Refusal>(refused).constraint, "gpu_count");
  EXPECT_FALSE(cluster.place_on(*cluster.find("n-a"), pinned));
  EXPECT_FALSE(cluster.why_never_fits(pinned));
  // An unknown or unschedulable node: refused, naming it.
  pinned.per_node.gpu_count = 1;
  cluster.set_schedulable(*cluster.find("n-b"), false);
  refused = cluster.place_or_explain(pinned);
  ASSERT_TRUE(std::holds_alternative<Refusal>(refused));
  EXPECT_EQ(std::get<Refusal>(refused).constraint, "node");
  EXPECT_NE(std::get<Refusal>(refused).message.find("n-b"), std::string::npos);
  pinned.node_id = "n-gone";
  const auto gone = cluster.why_never_fits(pinned);
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->constraint, "node");
  // A gang spans nodes: it cannot be pinned to one.
  pinned.node_id = "n-a";
  pinned.nodes = 2;
  EXPECT_FALSE(validate(pinned));
}

TEST(Cluster, AllocateAndReleaseAreAllOrNothing) {
  Cluster cluster;
  ASSERT_TRUE(cluster.upsert_node(node("n-a", 2)));
  ASSERT_TRUE(cluster.upsert_node(node("n-b", 2)));
  ASSERT_TRUE(cluster.allocate({{{1, {0}}}}));
  // The second part conflicts: the first must not be taken either.
  EXPECT_FALSE(cluster.allocate({{{0, {0, 1}}, {1, {0}}}}));
  EXPECT_EQ(cluster.free_gpu_milli(0), (std::vector<int>{1000, 1000}));
  EXPECT_FALSE(cluster.release({{{0, {0}}}}));
  EXPECT_TRUE(cluster.release({{{1, {0}}}}));
  EXPECT_FALSE(cluster.release({{{1, {0}}}}));
  EXPECT_TRUE(cluster.check_invariants());
}

TEST(Cluster, UnschedulableNodesKeepTheirWorkButGetNothingNew) {
  Cluster cluster;
  ASSERT_TRUE(cluster.upsert_node(node("n-a", 8)));
  ASSERT_TRUE(cluster.upsert_node(node("n-b", 8)));
  take(cluster, whole(2));  // on n-a
  cluster.set_schedulable(0, false);
  EXPECT_EQ(node_of(cluster, take(cluster, whole(2))), "n-b");
  EXPECT_EQ(cluster.stats().schedulable_nodes, 1);
  EXPECT_EQ(cluster.free_whole_gpus("h100-80g"), 6);
  EXPECT_TRUE(cluster.release({{{0, {0, 1}}}}));
  cluster.set_schedulable(0, true);
  EXPECT_TRUE(cluster.check_invariants());
  EXPECT_FALSE(cluster.upsert_node(node("n-b", 4)));  // n-b's work would not fit
  EXPECT_TRUE(cluster.upsert_node(node("n-a", 4)));   // n-a is empty again
}

TEST(Cluster, AnUnavailableGpuIsNeverChosenAndHoldsNoFreeCapacity) {
  Cluster cluster;
  ASSERT_TRUE(cluster.upsert_node(node("n-a", 2)));
  ASSERT_TRUE(cluster.upsert_node(node("n-b", 2)));
  const auto first = take(cluster, whole(1));  // n-a, GPU 0
  ASSERT_EQ(node_of(cluster, first), "n-a");
  // GPU 1 of n-a fails beside running work: n-a has nothing free left, n-b is untouched.
  ASSERT_TRUE(cluster.set_gpu_available(0, 1, false));
  EXPECT_FALSE(cluster.gpu_available(0, 1));
  EXPECT_EQ(cluster.free_gpu_milli(0), (std::vector<int>{0, 0}));
  EXPECT_EQ(cluster.free_whole_gpus("h100-80g"), 2);
  EXPECT_EQ(cluster.stats().gpu_milli_total, 3'000);
  EXPECT_EQ(node_of(cluster, take(cluster, shared(500))), "n-b");
  EXPECT_TRUE(cluster.check_invariants());
  // The work on a failed GPU stays allocated until released, and releasing it frees nothing.
  ASSERT_TRUE(cluster.set_gpu_available(0, 0, false));
  EXPECT_TRUE(cluster.release(Assignment{{first}}));
  EXPECT_EQ(cluster.free_gpu_milli(0), (std::vector<int>{0, 0}));
  EXPECT_FALSE(cluster.place(whole(2)));
  const auto refusal = std::get<Refusal>(cluster.place_or_explain(whole(2)));
  EXPECT_EQ(refusal.free_gpus, 1);  // n-b's second GPU
  // Back in service: n-a is an empty two-GPU node again, indexed as such.
  ASSERT_TRUE(cluster.set_gpu_available(0, 0, true));
  ASSERT_TRUE(cluster.set_gpu_available(0, 1, true));
  EXPECT_EQ(node_of(cluster, take(cluster, whole(2))), "n-a");
  EXPECT_FALSE(cluster.set_gpu_available(0, 2, false));  // n-a has no third GPU
  // A spec update of the same size keeps the mask; a resize clears it.
  ASSERT_TRUE(cluster.set_gpu_available(1, 0, false));
  ASSERT_TRUE(cluster.upsert_node(node("n-b", 2)));
  EXPECT_FALSE(cluster.gpu_available(1, 0));
  EXPECT_TRUE(cluster.check_invariants());
}

// Random demands: whole GPUs, a share of one, or CPU only, with host resources.
NodeDemand random_demand(Rng& rng) {
  NodeDemand demand;
  const int kind = between(rng, 0, 2);
  demand.gpu_count = kind == 2 ? 0 : kind == 1 ? 1 : between(rng, 1, 8);
  demand.gpu_milli = kind == 1 ? between(rng, 1, 9) * 100 : kMilliPerGpu;
  demand.cpu_milli = between(rng, 0, 64) * 1'000;
  demand.memory_mib = between(rng, 0, 512) * 1'024;
  demand.disk_gb = between(rng, 0, 400);
  return demand;
}

TEST(Scoring, FitsNodeSaysWhetherScoreNodeScores) {
  Rng rng(7);
  for (int round = 0; round < 2'000; ++round) {
    FreeCapacity free;
    for (int i = 0; i < between(rng, 0, 8); ++i) {
      const int milli = between(rng, 0, 3) == 0 ? kMilliPerGpu : between(rng, 0, 10) * 100;
      free.gpus.push_back({milli, i, i / 4, i / 2});
    }
    free.cpu_milli = between(rng, 0, 128) * 1'000;
    free.memory_mib = between(rng, 0, 1'024) * 1'024;
    free.disk_gb = between(rng, 0, 1'000);
    free.tracks_disk = between(rng, 0, 1) == 1;
    free.gpu_memory_mib = 81'920;
    const NodeDemand demand = random_demand(rng);
    EXPECT_EQ(
        fits_node(free, demand),
        score_node(free, demand, Policy::kBinpack, std::span<const ProfileEntry>()).has_value())
        << "round " << round;
  }
}

TEST(Cluster, FitsAfterReleasingAnswersAsReleasingAndPlacingWould) {
  Rng rng(11);
  for (int round = 0; round < 200; ++round) {
    Cluster cluster;
    auto spec = node("n-a", 8, "h100-80g", 2);
    spec.disk_gb = 2'000;
    ASSERT_TRUE(cluster.upsert_node(spec));
    // Fill the node with random work, then take a GPU out of service now and then.
    std::vector<Assignment> held;
    for (int i = 0; i < 12; ++i) {
      Request request;
      request.per_node = random_demand(rng);
      request.per_node.cpu_milli /= 4;
      request.per_node.memory_mib /= 4;
      request.per_node.disk_gb /= 4;
      if (auto placed = cluster.place(request); placed && cluster.allocate(*placed)) {
        held.push_back(std::move(*placed));
      }
    }
    if (between(rng, 0, 2) == 0) {
      ASSERT_TRUE(cluster.set_gpu_available(0, between(rng, 0, 7), false));
    }
    std::vector<const Assignment*> in_order;
    for (const auto& assignment : held) in_order.push_back(&assignment);
    Request wanted;
    wanted.per_node = random_demand(rng);
    const auto answer = cluster.fits_after_releasing(0, wanted, in_order);
    // What releasing them one by one and asking place_on() finds.
    std::optional<size_t> trial;
    size_t released = 0;
    while (released < held.size() && !trial) {
      ASSERT_TRUE(cluster.release(held[released++]));
      if (cluster.place_on(0, wanted)) trial = released;
    }
    EXPECT_EQ(answer, trial) << "round " << round;
    for (size_t i = 0; i < released; ++i) ASSERT_TRUE(cluster.allocate(held[i]));
    EXPECT_TRUE(cluster.check_invariants());
  }
}

TEST(Cluster, AGroupThatNeverFitARequestShapeLeavesItsRankingCleanly) {
  // Found by UBSan: an infeasible group emptying must not be looked up in the shape's ranking.
  Cluster cluster;
  ASSERT_TRUE(cluster.upsert_node(node("n-a", 2)));
  ASSERT_TRUE(cluster.upsert_node(node("n-b", 8)));
  EXPECT_EQ(node_of(cluster, take(cluster, whole(8))), "n-b");  // ranks n-a's group as unfit
  const auto small = take(cluster, whole(1));                   // n-a's group empties
  EXPECT_EQ(node_of(cluster, small), "n-a");
  EXPECT_FALSE(cluster.place(whole(8)));
  EXPECT_TRUE(cluster.release(Assignment{{small}}));
  EXPECT_TRUE(cluster.check_invariants());
}

TEST(Cluster, ValidateRejectsImpossibleShapes) {
  EXPECT_FALSE(validate(whole(-1)));
  EXPECT_FALSE(validate(whole(17)));
  Request two_shared = shared(500);
  two_shared.per_node.gpu_count = 2;
  EXPECT_FALSE(validate(two_shared));
  Request gang_shared = shared(500);
  gang_shared.nodes = 2;
  EXPECT_FALSE(validate(gang_shared));
  EXPECT_FALSE(validate(shared(0)));
  EXPECT_TRUE(validate(shared(999)));
}

// The index is an optimisation: for every request whose CPU and memory come from the profile,
// the indexed choice must score exactly like the best node found by scoring every node, also
// while GPUs go out of service and come back.
TEST(Cluster, IndexedChoiceMatchesScoringEveryNode) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    Rng rng(seed);
    const Policy policy = std::array{Policy::kBinpack, Policy::kSpread, Policy::kFgd}[seed % 3];
    Cluster cluster(policy);
    for (int i = 0; i < 60; ++i) {
      auto spec = node(fmt::format("n-{:03}", between(rng, 0, 999)) + std::to_string(i),
                       between(rng, 0, 2) == 0 ? 4 : 8, i % 3 ? "h100-80g" : "a100-80g",
                       between(rng, 1, 2));
      spec.cpu_milli = 32'000 * between(rng, 1, 4);
      ASSERT_TRUE(cluster.upsert_node(spec));
    }
    std::vector<ProfileEntry> profile;
    for (int count : {1, 2, 4, 8}) {
      auto request = whole(count);
      request.per_node.cpu_milli = 8'000 * count;
      profile.push_back({.demand = request.per_node, .weight = 1.0 / count});
    }
    for (int milli : {250, 500}) {
      auto request = shared(milli);
      request.per_node.cpu_milli = 4'000;
      profile.push_back({.demand = request.per_node, .weight = 2});
    }
    // Typed: under kFgd the h100-80g nodes are all unusable for it.
    profile.push_back({.demand = whole(1).per_node, .gpu_types = {"a100-80g"}, .weight = 1});
    cluster.set_profile(profile);
    std::vector<Assignment> held;
    for (int step = 0; step < 400; ++step) {
      // GPUs fail and come back (quarantine and release), some of them under running work.
      if (between(rng, 0, 9) == 0) {
        const auto h = static_cast<NodeHandle>(between(rng, 0, 59));
        const int gpu = between(rng, 0, static_cast<int>(cluster.spec(h).gpus.size()) - 1);
        ASSERT_TRUE(cluster.set_gpu_available(h, gpu, !cluster.gpu_available(h, gpu)));
        ASSERT_TRUE(cluster.check_invariants()) << cluster.check_invariants().error().message;
        continue;
      }
      if (!held.empty() && between(rng, 0, 3) == 0) {
        const auto victim = static_cast<size_t>(between(rng, 0, static_cast<int>(held.size()) - 1));
        ASSERT_TRUE(cluster.release(held[victim]));
        held.erase(held.begin() + static_cast<ptrdiff_t>(victim));
        continue;
      }
      Request request;
      request.per_node = profile[between(rng, 0, static_cast<int>(profile.size()) - 1)].demand;
      if (between(rng, 0, 1)) request.gpu_types = {"h100-80g"};
      // The reference: every schedulable node, scored directly.
      std::optional<NodeScore> best;
      std::string best_id;
      for (NodeHandle h = 0; h < cluster.node_count(); ++h) {
        const auto& spec = cluster.spec(h);
        if (!request.gpu_types.empty() && spec.gpu_type != request.gpu_types[0]) continue;
        FreeCapacity free;
        const auto milli = cluster.free_gpu_milli(h);
        std::map<int, int> domains;
        for (size_t i = 0; i < milli.size(); ++i) {
          free.gpus.push_back(
              {milli[i], static_cast<int>(i),
               domains.emplace(spec.gpus[i].nvlink_domain, domains.size()).first->second,
               spec.gpus[i].pcie_switch});
        }
        free.cpu_milli = cluster.free_resources(h).cpu_milli;
        free.memory_mib = spec.memory_mib;
        free.gpu_memory_mib = spec.gpu_memory_mib;
        free.gpu_type = spec.gpu_type;
        auto score = score_node(free, request.per_node, policy, cluster.profile());
        if (!score) continue;
        if (!best || NodeScore::better(*score, *best, policy) ||
            (NodeScore::same(*score, *best) && spec.id < best_id)) {
          best = score;
          best_id = spec.id;
        }
      }
      auto placed = cluster.place(request);
      ASSERT_EQ(placed.has_value(), best.has_value()) << "seed " << seed << " step " << step;
      if (!placed) continue;
      EXPECT_EQ(cluster.spec(placed->nodes[0].node).id, best_id) << "seed " << seed;
      for (int gpu : placed->nodes[0].gpus) {
        EXPECT_TRUE(cluster.gpu_available(placed->nodes[0].node, gpu)) << "seed " << seed;
      }
      ASSERT_TRUE(cluster.allocate(*placed));
      held.push_back(*placed);
      ASSERT_TRUE(cluster.check_invariants()) << cluster.check_invariants().error().message;
    }
  }
}

TEST(Cluster, ResultsDoNotDependOnTheOrderNodesWereAdded) {
  auto run = [](bool reversed) {
    Cluster cluster;
    std::vector<std::string> ids;
    for (int i = 0; i < 20; ++i) ids.push_back(fmt::format("n-{:02}", i));
    if (reversed) std::reverse(ids.begin(), ids.end());
    for (const auto& id : ids) EXPECT_TRUE(cluster.upsert_node(node(id, 8, "h100-80g", 2)));
    std::vector<std::string> placements;
    for (int i = 0; i < 50; ++i) {
      auto request = i % 3 ? whole(1 + i % 4) : shared(250 + 50 * (i % 5));
      auto placed = cluster.place(request);
      if (!placed) continue;
      EXPECT_TRUE(cluster.allocate(*placed));
      placements.push_back(fmt::format("{}:{}", cluster.spec(placed->nodes[0].node).id,
                                       fmt::join(placed->nodes[0].gpus, ",")));
    }
    return placements;
  };
  EXPECT_EQ(run(false), run(true));
}

}  // namespace
}  // namespace gpurent::sched
