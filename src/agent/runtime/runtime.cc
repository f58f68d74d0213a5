#include "agent/runtime/runtime.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include <algorithm>
#include <cctype>

namespace gpurent::agent {
namespace {

constexpr size_t kMaxInstanceIdLength = 128;
// Docker's limit on a reference (name, tag and digest).
constexpr size_t kMaxImageNameLength = 512;

}  // namespace

bool valid_instance_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxInstanceIdLength || id.front() == '.') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

namespace {

bool valid_string(std::string_view s) {
  return s.size() <= kMaxArgBytes && s.find('\0') == std::string_view::npos;
}

}  // namespace

std::string_view id_owner(const model::WorkloadSpec& spec) {
  return spec.tenant_id.empty() ? spec.instance_id : spec.tenant_id;
}

Status validate_workload(const model::WorkloadSpec& spec) {
  if (!valid_instance_id(spec.instance_id)) {
    return fail(Error::invalid("invalid_workload", fmt::format("instance id '{}' is not usable as "
                                                               "a directory name",
                                                               spec.instance_id)));
  }
  if (spec.run < 0) return fail(Error::invalid("invalid_workload", "run must be >= 0"));
  // A container may run its image's own command; a process needs one.
  if (spec.image.empty() ? spec.command.empty() || spec.command.front().empty()
                         : !spec.command.empty() && spec.command.front().empty()) {
    return fail(Error::invalid("invalid_workload", "the command is empty"));
  }
  if (spec.image.size() > kMaxImageNameLength ||
      spec.image.find_first_of(std::string_view(" \t\r\n\0", 5)) != std::string::npos) {
    return fail(
        Error::invalid("invalid_workload", fmt::format("image '{}' is not valid", spec.image)));
  }
  if (spec.command.size() > kMaxCommandArgs || spec.env.size() > kMaxEnvEntries) {
    return fail(Error::invalid("invalid_workload",
                               fmt::format("more than {} arguments or {} environment variables",
                                           kMaxCommandArgs, kMaxEnvEntries)));
  }
  if (!std::all_of(spec.command.begin(), spec.command.end(), valid_string)) {
    return fail(Error::invalid("invalid_workload", "an argument is too long or holds a NUL byte"));
  }
  for (const auto& [name, value] : spec.env) {
    if (name.empty() || name.find('=') != std::string::npos || !valid_string(name) ||
        !valid_string(value)) {
      return fail(Error::invalid("invalid_workload",
                                 fmt::format("environment variable '{}' is not valid", name)));
    }
  }
  for (const auto& gpu : spec.gpus) {
    if (gpu.find(',') != std::string::npos || !valid_string(gpu)) {
      return fail(Error::invalid("invalid_workload", fmt::format("GPU '{}' is not valid", gpu)));
    }
  }
  // The server checked them too; the agent does not trust a path it turns into a link or a mount.
  if (auto mounts = model::validate_volume_mounts(spec.volumes); !mounts) {
    return fail(Error::invalid("invalid_workload", mounts.error().message));
  }
  return {};
}

std::map<std::string, std::string> platform_env(const model::WorkloadSpec& spec) {
  auto env = spec.env;
  if (spec.job) {
    for (auto& [name, value] : model::job_member_env(*spec.job)) {
      env.insert_or_assign(name, std::move(value));
    }
  }
  const std::string gpus = fmt::format("{}", fmt::join(spec.gpus, ","));
  env["CUDA_VISIBLE_DEVICES"] = gpus;
  env["NVIDIA_VISIBLE_DEVICES"] = gpus;
  env["GPURENT_INSTANCE_ID"] = spec.instance_id;
  env["GPURENT_RUN"] = std::to_string(spec.run);
  return env;
}

Status check_instance_ended(const std::vector<Workload>& workloads, std::string_view instance_id) {
  for (const auto& workload : workloads) {
    if (workload.key.instance_id == instance_id &&
        workload.phase != model::WorkloadPhase::kExited) {
      return fail(Error::conflict("instance_running", fmt::format("run {} of {} has not ended",
                                                                  workload.key.run, instance_id)));
    }
  }
  return {};
}

void Runtime::guest_gpu_samples(int64_t /*time_ms*/, std::vector<model::GpuSample>& /*out*/) {}

Status Runtime::remove_instance(std::string_view instance_id) {
  GPURENT_CHECK(check_instance_ended(workloads(), instance_id));
  if (!valid_instance_id(instance_id)) {
    return fail(Error::invalid("invalid_instance_id",
                               fmt::format("'{}' is not an instance id", instance_id)));
  }
  std::error_code ec;
  std::filesystem::remove_all(instance_dir(instance_id), ec);
  if (ec) {
    return fail(Error::internal(
        fmt::format("cannot delete the directory of {}: {}", instance_id, ec.message())));
  }
  return {};
}

Status admit_workload(const WorkloadKey& key, bool already_tracked, size_t tracked) {
  if (already_tracked) {
    return fail(Error::conflict(
        "workload_exists", fmt::format("workload {}.{} already exists", key.instance_id, key.run)));
  }
  if (tracked >= kMaxWorkloads) {
    return fail({ErrorKind::kUnavailable, "too_many_workloads",
                 fmt::format("the node already tracks {} workloads", kMaxWorkloads)});
  }
  return {};
}

}  // namespace gpurent::agent
