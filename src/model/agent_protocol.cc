#include "model/agent_protocol.h"

#include "model/codec.h"

namespace gpurent::model {

std::string_view to_string(WorkloadPhase phase) {
  switch (phase) {
    case WorkloadPhase::kStarting:
      return "starting";
    case WorkloadPhase::kRunning:
      return "running";
    case WorkloadPhase::kExited:
      return "exited";
  }
  return "unknown";
}

bool parse_workload_phase(std::string_view text, WorkloadPhase* out) {
  for (auto phase : {WorkloadPhase::kStarting, WorkloadPhase::kRunning, WorkloadPhase::kExited}) {
    if (to_string(phase) == text) {
      *out = phase;
      return true;
    }
  }
  return false;
}

void to_json(Json& j, const NodeRegistration& v) {
  j = {{"name", v.name},
       {"gpus", v.gpus},
       {"cpu_count", v.cpu_count},
       {"memory_mb", v.memory_mb},
       {"disk_gb", v.disk_gb},
       {"fabric_group", v.fabric_group},
       {"labels", v.labels},
       {"address", v.address},
       {"simulated", v.simulated},
       {"container_runtime", v.container_runtime},
       {"agent_version", v.agent_version},
       {"isolation", v.isolation},
       {"isolation_note", v.isolation_note}};
}
void from_json(const Json& j, NodeRegistration& v) {
  v.name = j.at("name").get<std::string>();
  v.gpus = j.at("gpus").get<std::vector<Gpu>>();
  v.cpu_count = j.value("cpu_count", 0);
  v.memory_mb = j.value("memory_mb", int64_t{0});
  v.disk_gb = j.value("disk_gb", int64_t{0});
  v.fabric_group = j.value("fabric_group", std::string());
  v.labels = j.value("labels", std::map<std::string, std::string>());
  v.address = j.value("address", std::string());
  v.simulated = j.value("simulated", false);
  v.container_runtime = j.value("container_runtime", false);
  v.agent_version = j.value("agent_version", std::string());
  v.isolation = j.value("isolation", std::string());
  v.isolation_note = j.value("isolation_note", std::string());
}

void to_json(Json& j, const RegistrationResult& v) {
  j = {{"node_id", v.node_id}, {"credential", v.credential}};
}
void from_json(const Json& j, RegistrationResult& v) {
  v.node_id = j.at("node_id").get<std::string>();
  v.credential = j.at("credential").get<std::string>();
}

std::map<std::string, std::string> job_member_env(const JobMemberPlacement& placement) {
  const int per_node = placement.gpus_per_node;
  const std::string port = std::to_string(placement.master_port);
  return {
      {"GPURENT_JOB_ID", placement.job_id},
      {"GPURENT_ARRAY_INDEX", std::to_string(placement.index)},
      {"GPURENT_ARRAY_SIZE", std::to_string(placement.array_size)},
      {"MASTER_ADDR", placement.master_address},
      {"MASTER_PORT", port},
      {"WORLD_SIZE", std::to_string(placement.nodes * per_node)},
      {"LOCAL_WORLD_SIZE", std::to_string(per_node)},
      {"NNODES", std::to_string(placement.nodes)},
      {"NODE_RANK", std::to_string(placement.rank)},
      {"RANK", std::to_string(placement.rank * per_node)},
      {"PET_MASTER_ADDR", placement.master_address},
      {"PET_MASTER_PORT", port},
      {"PET_NNODES", std::to_string(placement.nodes)},
      {"PET_NPROC_PER_NODE", std::to_string(per_node)},
      {"PET_NODE_RANK", std::to_string(placement.rank)},
  };
}

void to_json(Json& j, const JobMemberPlacement& v) {
  j = {{"id", v.job_id},
       {"index", v.index},
       {"array_size", v.array_size},
       {"nodes", v.nodes},
       {"rank", v.rank},
       {"gpus_per_node", v.gpus_per_node},
       {"master_addr", v.master_address},
       {"master_port", v.master_port}};
}

void to_json(Json& j, const WorkloadSpec& v) {
  j = {{"instance_id", v.instance_id},
       {"tenant_id", v.tenant_id},
       {"run", v.run},
       {"should_run", v.should_run},
       {"command", v.command},
       {"env", v.env},
       {"gpus", v.gpus},
       {"image", v.image},
       {"cpu", v.cpu},
       {"memory_gb", v.memory_gb},
       {"volumes", v.volumes},
       {"services", v.services},
       {"workdir", v.workdir}};
  if (v.job) j["job"] = *v.job;
}

void to_json(Json& j, const DesiredState& v) {
  j = {{"node_id", v.node_id},
       {"generation", v.generation},
       {"workloads", v.workloads},
       {"volumes", v.volumes}};
}

}  // namespace gpurent::model
