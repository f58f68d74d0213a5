// What a simulation reads: the nodes of a cluster and the work that arrives, from gpurent's own
// CSV formats or from the Alibaba GPU cluster trace v2023 ("openb", the FGD paper's trace).
//
// gpurent's formats (memory in GiB, CPU in cores; decimals are exact, "0.5" cores = 500 milli):
//   NODES.csv  name,gpu_type,gpu_count,cpu,memory_gb[,nvlink_domains][,fabric][,labels]
//     nvlink_domains: the GPUs are split into this many equal NVLink domains (default 1);
//     labels: "k=v;k=v". gpu_memory_mib comes from the GPU catalog when gpu_type is a catalog
//     slug, else 0. An empty gpu_type needs gpu_count 0 (a CPU-only node).
//   WORK.csv   id,arrival_s,duration_s,gpu_type,gpu_count,gpu_milli,cpu,memory_gb,pricing
//              [,nodes][,tenant]
//     gpu_type: one type, a "|"-list of acceptable types, or empty for any; duration_s empty:
//     never leaves; gpu_milli empty: 1000 (whole GPUs); pricing on-demand|spot|reserved (empty:
//     on-demand); nodes: gang size (default 1), gpu_count GPUs on each.
//
// Alibaba trace (see the trace's README):
//   node list  sn,cpu_milli,memory_mib,gpu,model -> one NVLink domain per node, gpu_type = model
//     as written ("T4", "G2"), gpu_memory_mib 0 (the trace does not say).
//   pod list   name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
//              creation_time,deletion_time,scheduled_time
//     num_gpu GPUs of gpu_milli each (gpu_milli < 1000 only with num_gpu 1, the shared tier;
//     num_gpu 0: CPU only); gpu_spec "|"-list -> acceptable types; qos BE -> spot, others ->
//     on-demand; arrival = creation_time; duration = deletion_time - scheduled_time, or
//     - creation_time for a pod never scheduled (how long it stayed in the trace).
//
// Every reader checks each row (ranges, sched::validate of the request, unique names) and fails
// with an Error ("invalid_csv") naming the file, line and column. Order is the file's order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/instance.h"
#include "sched/cluster.h"
#include "sim/csv.h"

namespace gpurent::sim {

// One request arriving at the cluster: a pod of the trace, an instance or a job.
struct WorkItem {
  std::string id;
  int64_t arrival_s = 0;              // seconds from the start of the simulation
  std::optional<int64_t> duration_s;  // how long it runs once placed; nullopt: never leaves
  sched::Request request;
  model::PricingModel pricing = model::PricingModel::kOnDemand;
  std::string tenant;  // empty: the default tenant

  // GPU milli over all gang members: what this item adds to the "arrived workload".
  int64_t gpu_milli() const;
};

struct SimInput {
  std::vector<sched::NodeSpec> nodes;
  std::vector<WorkItem> work;
};

Result<std::vector<sched::NodeSpec>> nodes_from_csv(const CsvTable& table);
Result<std::vector<WorkItem>> work_from_csv(const CsvTable& table);
Result<std::vector<sched::NodeSpec>> nodes_from_alibaba(const CsvTable& table);
Result<std::vector<WorkItem>> work_from_alibaba(const CsvTable& table);

// Read and convert both files.
Result<SimInput> load_csv_input(const std::string& nodes_path, const std::string& work_path);
Result<SimInput> load_alibaba_input(const std::string& node_list_path,
                                    const std::string& pod_list_path);

}  // namespace gpurent::sim
