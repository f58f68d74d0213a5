#include "model/desired_state_json.h"

#include <fmt/format.h>

#include <array>

#include "model/json_reader.h"

namespace gpurent::model {

namespace {

using namespace json_reader;

// Reads the members of the object `value` (the member `member`): each key in `required` must be
// there, and on_member(key, value) reads each one it knows.
template <class OnMember, size_t N>
Status read_object(od::value value, std::string_view member,
                   const std::array<std::string_view, N>& required, OnMember on_member) {
  od::object object;
  if (const auto code = value.get_object().get(object)) return fail(member_error(member, code));
  std::array<bool, N> seen{};
  GPURENT_CHECK(for_each_member(object, [&](std::string_view key, od::value item) -> Status {
    for (size_t i = 0; i < N; ++i) seen[i] |= key == required[i];
    return on_member(key, item);
  }));
  for (size_t i = 0; i < N; ++i) {
    if (!seen[i]) return fail(missing(fmt::format("{}.{}", member, required[i])));
  }
  return {};
}

Status read_job(od::value value, JobMemberPlacement& job) {
  return read_object(value, "workloads[].job",
                     std::array<std::string_view, 8>{"id", "index", "array_size", "nodes", "rank",
                                                     "gpus_per_node", "master_addr", "master_port"},
                     [&](std::string_view key, od::value item) -> Status {
                       if (key == "id") return read(item, "workloads[].job.id", job.job_id);
                       if (key == "index") return read(item, "workloads[].job.index", job.index);
                       if (key == "array_size")
                         return read(item, "workloads[].job.array_size", job.array_size);
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
    return read_object(item, "workloads[].volumes[]",
                       std::array<std::string_view, 2>{"volume_id", "mount_path"},
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
  return read_object(
      value, "workloads[]",
      std::array<std::string_view, 6>{"instance_id", "run", "should_run", "command", "env", "gpus"},
      [&](std::string_view key, od::value item) -> Status {
        if (key == "instance_id")
          return read(item, "workloads[].instance_id", workload.instance_id);
        if (key == "run") return read(item, "workloads[].run", workload.run);
        if (key == "should_run") return read(item, "workloads[].should_run", workload.should_run);
        if (key == "command") return read(item, "workloads[].command", workload.command);
        if (key == "env") return read(item, "workloads[].env", workload.env);
        if (key == "gpus") return read(item, "workloads[].gpus", workload.gpus);
        if (key == "cpu") return read(item, "workloads[].cpu", workload.cpu);
        if (key == "memory_gb") return read(item, "workloads[].memory_gb", workload.memory_gb);
        if (key == "image") return read(item, "workloads[].image", workload.image);
        if (key == "services") return read(item, "workloads[].services", workload.services);
        if (key == "volumes") return read_mounts(item, workload.volumes);
        if (key == "job") return read_job(item, workload.job.emplace());
        return {};
      });
}

}  // namespace

Result<DesiredState> read_desired_state(std::string_view json) {
  GPURENT_TRY(object, open_object(json));
  DesiredState desired;
  bool has_node = false, has_generation = false, has_workloads = false;
  GPURENT_CHECK(for_each_member(object, [&](std::string_view key, od::value value) -> Status {
    if (key == "node_id") {
      has_node = true;
      return read(value, key, desired.node_id);
    }
    if (key == "generation") {
      has_generation = true;
      return read(value, key, desired.generation);
    }
    if (key == "volumes") return read(value, key, desired.volumes);
    if (key == "workloads") {
      has_workloads = true;
      desired.workloads.clear();
      return for_each_item(value, key, [&](od::value item) -> Status {
        return read_workload(item, desired.workloads.emplace_back());
      });
    }
    return {};
  }));
  if (!has_node) return fail(missing("node_id"));
  if (!has_generation) return fail(missing("generation"));
  if (!has_workloads) return fail(missing("workloads"));
  return desired;
}

}  // namespace gpurent::model
