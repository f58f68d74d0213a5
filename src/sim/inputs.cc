#include "sim/inputs.h"

#include <fmt/format.h>

#include <set>

#include "model/gpu_catalog.h"

namespace gpurent::sim {
namespace {

// Bounds on what a row may say, so arithmetic on totals cannot overflow.
constexpr int64_t kMaxCpuMilli = int64_t{1} << 40;
constexpr int64_t kMaxMemoryMib = int64_t{1} << 40;
constexpr int64_t kMaxSeconds = int64_t{1} << 40;
constexpr int64_t kMaxGangNodes = 65536;

using Names = std::set<std::string, std::less<>>;

Result<std::string> unique_name(const CsvColumns& columns, const CsvRecord& record,
                                std::string_view column, Names* seen) {
  GPURENT_TRY(name, columns.text(record, column));
  if (!seen->insert(name).second) {
    return fail(columns.error(record, column, fmt::format("'{}' appears twice", name)));
  }
  return name;
}

// "a|b|c" -> {"a", "b", "c"}; empty -> {} (any type).
Result<std::vector<std::string>> gpu_types(const CsvColumns& columns, const CsvRecord& record,
                                           std::string_view column) {
  std::vector<std::string> types;
  const std::string_view text = columns.field(record, column);
  if (text.empty()) return types;
  size_t start = 0;
  while (true) {
    const size_t bar = text.find('|', start);
    const std::string_view type =
        text.substr(start, bar == std::string_view::npos ? bar : bar - start);
    if (type.empty()) {
      return fail(columns.error(record, column, fmt::format("'{}' has an empty GPU type", text)));
    }
    types.emplace_back(type);
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  return types;
}

Result<std::map<std::string, std::string, std::less<>>> labels(const CsvColumns& columns,
                                                               const CsvRecord& record) {
  std::map<std::string, std::string, std::less<>> out;
  const std::string_view text = columns.field(record, "labels");
  size_t start = 0;
  while (start < text.size()) {
    const size_t semicolon = text.find(';', start);
    const std::string_view pair =
        text.substr(start, semicolon == std::string_view::npos ? semicolon : semicolon - start);
    start = semicolon == std::string_view::npos ? text.size() : semicolon + 1;
    if (pair.empty()) continue;  // tolerate "a=b;" and "a=b;;c=d"
    const size_t equals = pair.find('=');
    if (equals == 0 || equals == std::string_view::npos) {
      return fail(columns.error(record, "labels", fmt::format("'{}' is not key=value", pair)));
    }
    const std::string key(pair.substr(0, equals));
    if (!out.emplace(key, pair.substr(equals + 1)).second) {
      return fail(columns.error(record, "labels", fmt::format("'{}' is given twice", key)));
    }
  }
  return out;
}

// GPUs 0..count-1 in `domains` equal NVLink domains; PCIe switch and NUMA node follow the
// domain, which is how 8-GPU servers with two NVLink halves are built.
std::vector<sched::GpuDevice> gpu_devices(int count, int domains) {
  std::vector<sched::GpuDevice> gpus;
  const int per_domain = count / domains;
  for (int i = 0; i < count; ++i) {
    const int domain = i / per_domain;
    gpus.push_back(
        {.index = i, .nvlink_domain = domain, .pcie_switch = domain, .numa_node = domain});
  }
  return gpus;
}

int64_t catalog_gpu_memory_mib(std::string_view gpu_type) {
  const model::GpuType* type = model::find_gpu_type(gpu_type);
  return type ? type->memory_mb : 0;
}

Status validated(const CsvColumns& columns, const CsvRecord& record,
                 const sched::Request& request) {
  if (auto status = sched::validate(request); !status) {
    return fail(columns.error(record, status.error().message));
  }
  return {};
}

}  // namespace

int64_t WorkItem::gpu_milli() const {
  return int64_t{request.nodes} * request.per_node.gpu_count * request.per_node.gpu_milli;
}

Result<std::vector<sched::NodeSpec>> nodes_from_csv(const CsvTable& table) {
  GPURENT_TRY(columns,
              CsvColumns::resolve(table, {"name", "gpu_type", "gpu_count", "cpu", "memory_gb"},
                                  {"nvlink_domains", "fabric", "labels"}));
  std::vector<sched::NodeSpec> nodes;
  Names names;
  for (const CsvRecord& record : table.records) {
    sched::NodeSpec spec;
    GPURENT_TRY(name, unique_name(columns, record, "name", &names));
    spec.id = std::move(name);
    spec.gpu_type = columns.field(record, "gpu_type");
    GPURENT_TRY(gpu_count, columns.integer(record, "gpu_count", 0, sched::kMaxGpusPerNode));
    if ((gpu_count == 0) != spec.gpu_type.empty()) {
      return fail(columns.error(record, "gpu_type",
                                "must be empty exactly when gpu_count is 0 (a CPU-only node)"));
    }
    GPURENT_TRY(cpu_milli, columns.decimal(record, "cpu", 1000, kMaxCpuMilli));
    GPURENT_TRY(memory_mib, columns.decimal(record, "memory_gb", 1024, kMaxMemoryMib));
    GPURENT_TRY(domains,
                columns.optional_integer(record, "nvlink_domains", 1, sched::kMaxGpusPerNode));
    const int domain_count = static_cast<int>(domains.value_or(1));
    if (gpu_count > 0 && gpu_count % domain_count != 0) {
      return fail(columns.error(
          record, "nvlink_domains",
          fmt::format("{} GPUs cannot be split into {} equal domains", gpu_count, domain_count)));
    }
    spec.gpus = gpu_devices(static_cast<int>(gpu_count), domain_count);
    spec.gpu_memory_mib = catalog_gpu_memory_mib(spec.gpu_type);
    spec.cpu_milli = cpu_milli;
    spec.memory_mib = memory_mib;
    spec.fabric_group = columns.field(record, "fabric");
    GPURENT_TRY(node_labels, labels(columns, record));
    spec.labels = std::move(node_labels);
    nodes.push_back(std::move(spec));
  }
  return nodes;
}

Result<std::vector<WorkItem>> work_from_csv(const CsvTable& table) {
  GPURENT_TRY(columns,
              CsvColumns::resolve(table,
                                  {"id", "arrival_s", "duration_s", "gpu_type", "gpu_count",
                                   "gpu_milli", "cpu", "memory_gb", "pricing"},
                                  {"nodes", "tenant"}));
  std::vector<WorkItem> items;
  Names ids;
  for (const CsvRecord& record : table.records) {
    WorkItem item;
    GPURENT_TRY(id, unique_name(columns, record, "id", &ids));
    item.id = std::move(id);
    GPURENT_TRY(arrival, columns.integer(record, "arrival_s", 0, kMaxSeconds));
    item.arrival_s = arrival;
    GPURENT_TRY(duration, columns.optional_integer(record, "duration_s", 0, kMaxSeconds));
    item.duration_s = duration;
    GPURENT_TRY(types, gpu_types(columns, record, "gpu_type"));
    item.request.gpu_types = std::move(types);
    sched::NodeDemand& demand = item.request.per_node;
    GPURENT_TRY(gpu_count, columns.integer(record, "gpu_count", 0, sched::kMaxGpusPerNode));
    demand.gpu_count = static_cast<int>(gpu_count);
    GPURENT_TRY(gpu_milli, columns.optional_integer(record, "gpu_milli", gpu_count == 0 ? 0 : 1,
                                                    sched::kMilliPerGpu));
    // A CPU-only request keeps the default: its GPU fraction means nothing.
    if (gpu_count > 0) demand.gpu_milli = static_cast<int>(gpu_milli.value_or(sched::kMilliPerGpu));
    GPURENT_TRY(cpu_milli, columns.decimal(record, "cpu", 1000, kMaxCpuMilli));
    demand.cpu_milli = cpu_milli;
    GPURENT_TRY(memory_mib, columns.decimal(record, "memory_gb", 1024, kMaxMemoryMib));
    demand.memory_mib = memory_mib;
    const std::string_view pricing = columns.field(record, "pricing");
    if (!pricing.empty() && !model::parse_pricing_model(pricing, &item.pricing)) {
      return fail(columns.error(record, "pricing",
                                fmt::format("'{}' is not on_demand, spot or reserved", pricing)));
    }
    GPURENT_TRY(nodes, columns.optional_integer(record, "nodes", 1, kMaxGangNodes));
    item.request.nodes = static_cast<int>(nodes.value_or(1));
    item.tenant = columns.field(record, "tenant");
    GPURENT_CHECK(validated(columns, record, item.request));
    items.push_back(std::move(item));
  }
  return items;
}

Result<std::vector<sched::NodeSpec>> nodes_from_alibaba(const CsvTable& table) {
  GPURENT_TRY(columns,
              CsvColumns::resolve(table, {"sn", "cpu_milli", "memory_mib", "gpu", "model"}));
  std::vector<sched::NodeSpec> nodes;
  Names names;
  for (const CsvRecord& record : table.records) {
    sched::NodeSpec spec;
    GPURENT_TRY(name, unique_name(columns, record, "sn", &names));
    spec.id = std::move(name);
    spec.gpu_type = columns.field(record, "model");
    GPURENT_TRY(gpu_count, columns.integer(record, "gpu", 0, sched::kMaxGpusPerNode));
    if ((gpu_count == 0) != spec.gpu_type.empty()) {
      return fail(columns.error(record, "model", "must be empty exactly when gpu is 0"));
    }
    spec.gpus = gpu_devices(static_cast<int>(gpu_count), 1);
    GPURENT_TRY(cpu_milli, columns.integer(record, "cpu_milli", 0, kMaxCpuMilli));
    spec.cpu_milli = cpu_milli;
    GPURENT_TRY(memory_mib, columns.integer(record, "memory_mib", 0, kMaxMemoryMib));
    spec.memory_mib = memory_mib;
    nodes.push_back(std::move(spec));
  }
  return nodes;
}

Result<std::vector<WorkItem>> work_from_alibaba(const CsvTable& table) {
  GPURENT_TRY(columns, CsvColumns::resolve(
                           table, {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"},
                           {"gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time",
                            "scheduled_time"}));
  std::vector<WorkItem> items;
  Names names;
  for (const CsvRecord& record : table.records) {
    WorkItem item;
    GPURENT_TRY(name, unique_name(columns, record, "name", &names));
    item.id = std::move(name);
    sched::NodeDemand& demand = item.request.per_node;
    GPURENT_TRY(cpu_milli, columns.integer(record, "cpu_milli", 0, kMaxCpuMilli));
    demand.cpu_milli = cpu_milli;
    GPURENT_TRY(memory_mib, columns.integer(record, "memory_mib", 0, kMaxMemoryMib));
    demand.memory_mib = memory_mib;
    GPURENT_TRY(num_gpu, columns.integer(record, "num_gpu", 0, sched::kMaxGpusPerNode));
    GPURENT_TRY(gpu_milli, columns.integer(record, "gpu_milli", 0, sched::kMilliPerGpu));
    // The README: gpu_milli is the share of each GPU, below 1000 only for single-GPU sharing
    // pods; CPU-only pods carry 0.
    if (num_gpu == 1 && gpu_milli == 0) {
      return fail(columns.error(record, "gpu_milli", "0 for a pod with a GPU"));
    }
    if (num_gpu > 1 && gpu_milli != sched::kMilliPerGpu) {
      return fail(
          columns.error(record, "gpu_milli", "below 1000 is only for single-GPU (sharing) pods"));
    }
    demand.gpu_count = static_cast<int>(num_gpu);
    if (num_gpu > 0) demand.gpu_milli = static_cast<int>(gpu_milli);
    GPURENT_TRY(types, gpu_types(columns, record, "gpu_spec"));
    item.request.gpu_types = std::move(types);
    item.pricing = columns.field(record, "qos") == "BE" ? model::PricingModel::kSpot
                                                        : model::PricingModel::kOnDemand;
    // Lists without times (some published ones have only the request) arrive at 0 and stay.
    GPURENT_TRY(created, columns.optional_integer(record, "creation_time", 0, kMaxSeconds));
    item.arrival_s = created.value_or(0);
    GPURENT_TRY(deleted, columns.optional_integer(record, "deletion_time", 0, kMaxSeconds));
    GPURENT_TRY(scheduled, columns.optional_integer(record, "scheduled_time", 0, kMaxSeconds));
    if (deleted) {
      const int64_t start = scheduled.value_or(item.arrival_s);
      if (*deleted < start) {
        return fail(columns.error(record, "deletion_time", "before the pod started"));
      }
      item.duration_s = *deleted - start;
    }
    GPURENT_CHECK(validated(columns, record, item.request));
    items.push_back(std::move(item));
  }
  return items;
}

Result<SimInput> load_csv_input(const std::string& nodes_path, const std::string& work_path) {
  GPURENT_TRY(node_table, read_csv_file(nodes_path));
  GPURENT_TRY(nodes, nodes_from_csv(node_table));
  GPURENT_TRY(work_table, read_csv_file(work_path));
  GPURENT_TRY(work, work_from_csv(work_table));
  return SimInput{std::move(nodes), std::move(work)};
}

Result<SimInput> load_alibaba_input(const std::string& node_list_path,
                                    const std::string& pod_list_path) {
  GPURENT_TRY(node_table, read_csv_file(node_list_path));
  GPURENT_TRY(nodes, nodes_from_alibaba(node_table));
  GPURENT_TRY(pod_table, read_csv_file(pod_list_path));
  GPURENT_TRY(work, work_from_alibaba(pod_table));
  return SimInput{std::move(nodes), std::move(work)};
}

}  // namespace gpurent::sim
