#include "sim/inputs.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace gpurent::sim {
namespace {

template <class T>
T ok(Result<T> result) {
  EXPECT_TRUE(result.has_value()) << result.error().message;
  return result ? std::move(*result) : T{};
}

Result<std::vector<sched::NodeSpec>> nodes(std::string_view text) {
  GPURENT_TRY(table, parse_csv(text, "N.csv"));
  return nodes_from_csv(table);
}

Result<std::vector<WorkItem>> work(std::string_view text) {
  GPURENT_TRY(table, parse_csv(text, "W.csv"));
  return work_from_csv(table);
}

Result<std::vector<WorkItem>> pods(std::string_view rows) {
  GPURENT_TRY(table, parse_csv(fmt::format("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,"
                                           "qos,pod_phase,creation_time,deletion_time,"
                                           "scheduled_time\n{}",
                                           rows),
                               "pods.csv"));
  return work_from_alibaba(table);
}

std::string message(const auto& result) {
  EXPECT_FALSE(result.has_value());
  if (result) return "";
  EXPECT_EQ(result.error().code, "invalid_csv");
  return result.error().message;
}

TEST(NodesCsv, MapsColumnsTopologyAndCatalogMemory) {
  const auto specs =
      ok(nodes("name,gpu_type,gpu_count,cpu,memory_gb,nvlink_domains,fabric,labels\n"
               "a,h100-80g,8,112,2048,2,ib-1,region=eu;zone=eu-1a\n"
               "b,mystery-gpu,2,0.5,1.5,,,\n"
               "c,,0,64,256,,,\n"));
  ASSERT_EQ(specs.size(), 3u);
  const sched::NodeSpec& a = specs[0];
  EXPECT_EQ(a.id, "a");
  EXPECT_EQ(a.gpu_type, "h100-80g");
  EXPECT_EQ(a.gpu_memory_mib, 81920);
  EXPECT_EQ(a.cpu_milli, 112'000);
  EXPECT_EQ(a.memory_mib, 2048 * 1024);
  EXPECT_EQ(a.fabric_group, "ib-1");
  EXPECT_EQ(a.labels.at("region"), "eu");
  EXPECT_EQ(a.labels.at("zone"), "eu-1a");
  ASSERT_EQ(a.gpus.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(a.gpus[i].index, i);
    EXPECT_EQ(a.gpus[i].nvlink_domain, i / 4);
  }
  EXPECT_EQ(specs[1].gpu_memory_mib, 0);  // not in the catalog
  EXPECT_EQ(specs[1].cpu_milli, 500);
  EXPECT_EQ(specs[1].memory_mib, 1536);
  EXPECT_EQ(specs[1].gpus[1].nvlink_domain, 0);  // default: one domain
  EXPECT_TRUE(specs[2].gpus.empty());
  EXPECT_TRUE(specs[2].gpu_type.empty());
}

TEST(NodesCsv, RefusesBadRows) {
  constexpr std::string_view kHeader =
      "name,gpu_type,gpu_count,cpu,memory_gb,nvlink_domains,labels\n";
  const auto with = [&](std::string_view row) {
    return nodes(std::string(kHeader) + std::string(row));
  };
  EXPECT_EQ(message(with("a,h100-80g,8,1,1,3,\n")),
            "N.csv line 2: column nvlink_domains: 8 GPUs cannot be split into 3 equal domains");
  EXPECT_EQ(message(with("a,,8,1,1,,\n")),
            "N.csv line 2: column gpu_type: must be empty exactly when gpu_count is 0 (a "
            "CPU-only node)");
  EXPECT_EQ(message(with("a,t4,17,1,1,,\n")),
            "N.csv line 2: column gpu_count: '17' is not a whole number in [0, 16]");
  EXPECT_EQ(message(with("a,t4,1,1,1,,\na,t4,1,1,1,,\n")),
            "N.csv line 3: column name: 'a' appears twice");
  EXPECT_EQ(message(with("a,t4,1,1,1,,zone\n")),
            "N.csv line 2: column labels: 'zone' is not key=value");
  EXPECT_EQ(message(with("a,t4,1,1,1,,a=1;a=2\n")),
            "N.csv line 2: column labels: 'a' is given twice");
  EXPECT_EQ(message(with("a,t4,1,lots,1,,\n")),
            "N.csv line 2: column cpu: 'lots' is not a number from 0 to 1099511627 in steps of "
            "1/1000");
  EXPECT_EQ(message(nodes("name,gpu_type,gpu_count,cpu\n")),
            "N.csv line 1: the column 'memory_gb' is missing");
  EXPECT_EQ(message(nodes("name,gpu_type,gpu_count,cpu,memory_gb,nvlink\n")),
            "N.csv line 1: unknown column 'nvlink'");
}

TEST(WorkCsv, MapsColumns) {
  const auto items =
      ok(work("id,arrival_s,duration_s,gpu_type,gpu_count,gpu_milli,cpu,memory_gb,pricing,nodes,"
              "tenant\n"
              "train,10,3600,h100-80g|a100-80g,8,,96,1024,reserved,4,acme\n"
              "share,20,,,1,250,2,16,spot,,\n"
              "cpu,30,5,,0,,4,8,,,\n"));
  ASSERT_EQ(items.size(), 3u);
  const WorkItem& train = items[0];
  EXPECT_EQ(train.id, "train");
  EXPECT_EQ(train.arrival_s, 10);
  EXPECT_EQ(train.duration_s, 3600);
  EXPECT_EQ(train.request.gpu_types, (std::vector<std::string>{"h100-80g", "a100-80g"}));
  EXPECT_EQ(train.request.per_node.gpu_count, 8);
  EXPECT_EQ(train.request.per_node.gpu_milli, 1000);
  EXPECT_EQ(train.request.per_node.cpu_milli, 96'000);
  EXPECT_EQ(train.request.per_node.memory_mib, 1024 * 1024);
  EXPECT_EQ(train.request.nodes, 4);
  EXPECT_EQ(train.pricing, model::PricingModel::kReserved);
  EXPECT_EQ(train.tenant, "acme");
  EXPECT_EQ(train.gpu_milli(), 32'000);

  const WorkItem& share = items[1];
  EXPECT_FALSE(share.duration_s.has_value());    // never leaves
  EXPECT_TRUE(share.request.gpu_types.empty());  // any type
  EXPECT_EQ(share.request.per_node.gpu_milli, 250);
  EXPECT_EQ(share.request.nodes, 1);
  EXPECT_EQ(share.pricing, model::PricingModel::kSpot);
  EXPECT_EQ(share.gpu_milli(), 250);

  EXPECT_EQ(items[2].pricing, model::PricingModel::kOnDemand);
  EXPECT_EQ(items[2].request.per_node.gpu_count, 0);
  EXPECT_EQ(items[2].gpu_milli(), 0);
}

TEST(WorkCsv, RefusesBadRows) {
  constexpr std::string_view kHeader =
      "id,arrival_s,duration_s,gpu_type,gpu_count,gpu_milli,cpu,memory_gb,pricing\n";
  const auto with = [&](std::string_view row) {
    return work(std::string(kHeader) + std::string(row));
  };
  EXPECT_EQ(message(with("a,0,,,1,,1,1,cheap\n")),
            "W.csv line 2: column pricing: 'cheap' is not on_demand, spot or reserved");
  EXPECT_EQ(message(with("a,-1,,,1,,1,1,\n")),
            "W.csv line 2: column arrival_s: '-1' is not a whole number in [0, 1099511627776]");
  EXPECT_EQ(message(with("a,0,,,1,1001,1,1,\n")),
            "W.csv line 2: column gpu_milli: '1001' is not a whole number in [1, 1000]");
  EXPECT_EQ(message(with("a,0,,a||b,1,,1,1,\n")),
            "W.csv line 2: column gpu_type: 'a||b' has an empty GPU type");
  EXPECT_EQ(message(with("a,0,,,1,,1,1,\na,0,,,1,,1,1,\n")),
            "W.csv line 3: column id: 'a' appears twice");
  // A fraction of a GPU for two GPUs: sched::validate refuses the request, the row is named.
  EXPECT_TRUE(message(with("a,0,,,1,,1,1,\nb,0,,,2,500,1,1,\n")).starts_with("W.csv line 3: "));
}

TEST(AlibabaNodes, MapsTheNodeList) {
  auto table =
      ok(parse_csv("sn,cpu_milli,memory_mib,gpu,model\n"
                   "openb-node-0000,64000,262144,2,P100\n"
                   "openb-node-0001,96000,786432,8,G2\n"
                   "openb-node-1300,32000,131072,0,\n",
                   "nodes.csv"));
  const auto specs = ok(nodes_from_alibaba(table));
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0].id, "openb-node-0000");
  EXPECT_EQ(specs[0].gpu_type, "P100");
  EXPECT_EQ(specs[0].gpu_memory_mib, 0);
  EXPECT_EQ(specs[0].cpu_milli, 64000);
  EXPECT_EQ(specs[0].memory_mib, 262144);
  ASSERT_EQ(specs[1].gpus.size(), 8u);
  EXPECT_EQ(specs[1].gpus[7].index, 7);
  EXPECT_EQ(specs[1].gpus[7].nvlink_domain, 0);
  EXPECT_TRUE(specs[2].gpus.empty());
}

TEST(AlibabaPods, MapsSharingWholeAndCpuOnlyPods) {
  const auto items =
      ok(pods("p-share,6000,12288,1,460,,LS,Running,427061,12902960,427061\n"
              "p-eight,64000,262144,8,1000,V100M16|V100M32,BE,Succeeded,5,100,10\n"
              "p-cpu,4000,8192,0,0,,Burstable,Running,7,,7\n"
              "p-pending,11908,47104,1,1000,,BE,Pending,10001278,10001403,\n"));
  ASSERT_EQ(items.size(), 4u);
  const WorkItem& share = items[0];
  EXPECT_EQ(share.request.per_node.gpu_count, 1);
  EXPECT_EQ(share.request.per_node.gpu_milli, 460);
  EXPECT_EQ(share.request.per_node.cpu_milli, 6000);
  EXPECT_EQ(share.request.per_node.memory_mib, 12288);
  EXPECT_TRUE(share.request.gpu_types.empty());
  EXPECT_EQ(share.pricing, model::PricingModel::kOnDemand);
  EXPECT_EQ(share.arrival_s, 427061);
  EXPECT_EQ(share.duration_s, 12902960 - 427061);
  EXPECT_EQ(share.gpu_milli(), 460);

  const WorkItem& eight = items[1];
  EXPECT_EQ(eight.request.per_node.gpu_count, 8);
  EXPECT_EQ(eight.request.gpu_types, (std::vector<std::string>{"V100M16", "V100M32"}));
  EXPECT_EQ(eight.pricing, model::PricingModel::kSpot);
  EXPECT_EQ(eight.duration_s, 90);  // from scheduled_time
  EXPECT_EQ(eight.gpu_milli(), 8000);

  const WorkItem& cpu = items[2];
  EXPECT_EQ(cpu.request.per_node.gpu_count, 0);
  EXPECT_EQ(cpu.gpu_milli(), 0);
  EXPECT_FALSE(cpu.duration_s.has_value());

  EXPECT_EQ(items[3].duration_s, 10001403 - 10001278);  // never scheduled: from creation
}

TEST(AlibabaPods, RefusesWhatTheFormatRulesOut) {
  EXPECT_EQ(message(pods("p,1,1,2,500,,LS,Running,0,,0\n")),
            "pods.csv line 2: column gpu_milli: below 1000 is only for single-GPU (sharing) pods");
  EXPECT_EQ(message(pods("p,1,1,1,0,,LS,Running,0,,0\n")),
            "pods.csv line 2: column gpu_milli: 0 for a pod with a GPU");
  EXPECT_EQ(message(pods("p,1,1,1,1000,,LS,Running,50,40,45\n")),
            "pods.csv line 2: column deletion_time: before the pod started");
  EXPECT_EQ(message(pods("p,1,1,9x,1000,,LS,Running,0,,0\n")),
            "pods.csv line 2: column num_gpu: '9x' is not a whole number in [0, 16]");
}

TEST(WorkCsv, TakesTheApisSpellingOfOnDemandAndTheOldOne) {
  const auto items =
      ok(work("id,arrival_s,duration_s,gpu_type,gpu_count,gpu_milli,cpu,memory_gb,pricing\n"
              "api,0,1,,1,,1,1,on_demand\n"
              "old,0,1,,1,,1,1,on-demand\n"));
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].pricing, model::PricingModel::kOnDemand);
  EXPECT_EQ(items[1].pricing, model::PricingModel::kOnDemand);
  EXPECT_EQ(
      message(work("id,arrival_s,duration_s,gpu_type,gpu_count,gpu_milli,cpu,memory_gb,pricing\n"
                   "x,0,1,,1,,1,1,On-Demand\n")),
      "W.csv line 2: column pricing: 'On-Demand' is not on_demand, spot or reserved");
}

TEST(AlibabaPods, ListsWithOnlyTheRequestColumnsTakeTheReadmesDefaults) {
  // Some published pod lists have only the request: any GPU model, not best-effort (on-demand),
  // all arriving at 0 and never leaving.
  const auto table =
      ok(parse_csv("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                   "p-1,8000,16384,1,500\n"
                   "p-2,32000,65536,4,1000\n",
                   "short.csv"));
  const auto items = ok(work_from_alibaba(table));
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].request.per_node.gpu_milli, 500);
  EXPECT_TRUE(items[0].request.gpu_types.empty());
  EXPECT_EQ(items[0].pricing, model::PricingModel::kOnDemand);
  EXPECT_EQ(items[0].arrival_s, 0);
  EXPECT_FALSE(items[0].duration_s.has_value());
  EXPECT_EQ(items[1].gpu_milli(), 4000);
}

}  // namespace
}  // namespace gpurent::sim
