#include "model/desired_state_json.h"

#include <array>

#include "model/json_reader.h"

namespace gpurent::model {

namespace {

using namespace json_reader;

Status read_job(od::value value, JobMemberPlacement& job) {
  return read_members(
      value, "workloads[].job",
      std::array<std::string_view, 8>{"id", "index", "array_size", "nodes", "rank", "gpus_per_node",
                                      "master_addr", "master_port"},
      [&](std::string_view key, od::value item) -> Status {
        if (key == "id") return read(item, "workloads[].job.id", job.job_id);
        if (key == "index") return read(item, "workloads[].job.index", job.index);
        if (key == "array_size") return read(item, "workloads[].job.array_size", job.array_size);
        if (key == "nodes") return read(item, "workloads[].job.nodes", job.nodes);
        if (key == "rank") return read(item, "workloads[].job.rank", job.rank);
        if (key == "gpus_per_node") {
          return read(item, "workloads[].job.gpus_per_node", job.gpus_per_node);
        }
        if (key == "master_addr") {
          return read(item, "workloads[].job.master_addr", job.master_address);
        }
        if (key == "master_port") {
          return read(item, "workloads[].job.master_port", job.master_port);
        }
        return {};
      });
}

Status read_mounts(od::value value, std::vector<VolumeMount>& mounts) {
  mounts.clear();
  return for_each_item(value, "workloads[].volumes", [&](od::value item) -> Status {
    VolumeMount& mount = mounts.emplace_back();
    return read_members(
        item, "workloads[].volumes[]", std::array<std::string_view, 2>{"volume_id", "mount_path"},
        [&](std::string_view key, od::value field) -> Status {
          if (key == "volume_id") {
            return read(field, "workloads[].volumes[].volume_id", mount.volume_id);
          }
          if (key == "mount_path") {
            return read(field, "workloads[].volumes[].mount_path", mount.mount_path);
          }
          return {};
        });
  });
}

Status read_workload(od::value value, WorkloadSpec& workload) {
  return read_members(
      value, "workloads[]",
      std::array<std::string_view, 6>{"instance_id", "run", "should_run", "command", "env", "gpus"},
      [&](std::string_view key, od::value item) -> Status {
        if (key == "instance_id")
          return read(item, "workloads[].instance_id", workload.instance_id);
        if (key == "run") return read(item, "workloads[].run", workload.run);
        if (key == "tenant_id") return read(item, "workloads[].tenant_id", workload.tenant_id);
        if (key == "should_run") return read(item, "workloads[].should_run", workload.should_run);
        if (key == "command") return read(item, "workloads[].command", workload.command);
        if (key == "env") return read(item, "workloads[].env", workload.env);
        if (key == "gpus") return read(item, "workloads[].gpus", workload.gpus);
        if (key == "cpu") return read(item, "workloads[].cpu", workload.cpu);
        if (key == "memory_gb") return read(item, "workloads[].memory_gb", workload.memory_gb);
        if (key == "image") return read(item, "workloads[].image", workload.image);
        if (key == "services") return read(item, "workloads[].services", workload.services);
        if (key == "workdir") return read(item, "workloads[].workdir", workload.workdir);
        if (key == "volumes") return read_mounts(item, workload.volumes);
        if (key == "job") return read_job(item, workload.job.emplace());
        return {};
      });
}

}  // namespace

Result<DesiredState> read_desired_state(std::string_view json) {
  GPURENT_TRY(object, open_object(json));
  DesiredState desired;
  GPURENT_CHECK(read_members(object, "",
                             std::array<std::string_view, 3>{"node_id", "generation", "workloads"},
                             [&](std::string_view key, od::value value) -> Status {
                               if (key == "node_id") return read(value, key, desired.node_id);
                               if (key == "generation") return read(value, key, desired.generation);
                               if (key == "volumes") return read(value, key, desired.volumes);
                               if (key == "workloads") {
                                 desired.workloads.clear();
                                 return for_each_item(value, key, [&](od::value item) -> Status {
                                   return read_workload(item, desired.workloads.emplace_back());
                                 });
                               }
                               return {};
                             }));
  return desired;
}

}  // namespace gpurent::model
