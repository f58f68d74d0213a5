#include "agent/runtime/runtime_set.h"

#include <algorithm>

namespace gpurent::agent {
namespace {

constexpr size_t kProcesses = 0;
constexpr size_t kContainers = 1;
constexpr size_t kVms = 2;

}  // namespace

RuntimeSet::RuntimeSet(std::unique_ptr<Runtime> processes, std::unique_ptr<Runtime> containers,
                       std::unique_ptr<Runtime> vms)
    : runtimes_{std::move(processes), std::move(containers), std::move(vms)} {}

Runtime* RuntimeSet::owner(const WorkloadKey& key) const {
  for (const auto& runtime : runtimes_) {
    if (runtime && runtime->find(key)) return runtime.get();
  }
  return nullptr;
}

Status RuntimeSet::start(const model::WorkloadSpec& spec) {
  // A run is unique across all: the same key in another runtime is a duplicate too.
  if (owner({spec.instance_id, spec.run})) {
    return fail(Error::conflict("workload_exists", "the workload already exists"));
  }
  if (spec.vm) {
    if (!runtimes_[kVms]) {
      return fail(Error::unprocessable("no_vm_runtime",
                                       "this node runs no VMs (start its agent with --vm-kernel)"));
    }
    return runtimes_[kVms]->start(spec);
  }
  if (spec.image.empty()) return runtimes_[kProcesses]->start(spec);
  if (!runtimes_[kContainers]) {
    return fail(Error::unprocessable(
        "no_container_runtime",
        "this node has no container engine (start its agent with --container-socket)"));
  }
  return runtimes_[kContainers]->start(spec);
}

void RuntimeSet::stop(const WorkloadKey& key) {
  if (Runtime* runtime = owner(key)) runtime->stop(key);
}

Status RuntimeSet::forget(const WorkloadKey& key) {
  Runtime* runtime = owner(key);
  return runtime ? runtime->forget(key) : Status{};
}

void RuntimeSet::poll() {
  for (const auto& runtime : runtimes_) {
    if (runtime) runtime->poll();
  }
}

std::vector<Workload> RuntimeSet::workloads() const {
  std::vector<Workload> all;
  for (const auto& runtime : runtimes_) {
    if (!runtime) continue;
    auto more = runtime->workloads();
    all.insert(all.end(), std::make_move_iterator(more.begin()),
               std::make_move_iterator(more.end()));
  }
  return all;
}

const Workload* RuntimeSet::find(const WorkloadKey& key) const {
  for (const auto& runtime : runtimes_) {
    if (const Workload* found = runtime ? runtime->find(key) : nullptr) return found;
  }
  return nullptr;
}

std::optional<Runtime::SteadyTime> RuntimeSet::next_deadline() const {
  std::optional<SteadyTime> next;
  for (const auto& runtime : runtimes_) {
    if (!runtime) continue;
    if (const auto other = runtime->next_deadline(); other && (!next || *other < *next)) {
      next = other;
    }
  }
  return next;
}

std::filesystem::path RuntimeSet::instance_dir(std::string_view instance_id) const {
  return runtimes_[kProcesses]->instance_dir(instance_id);
}

Status RuntimeSet::remove_instance(std::string_view instance_id) {
  // A run in any runtime keeps the files of all: the process and VM runtimes share the instance's
  // directory.
  GPURENT_CHECK(check_instance_ended(workloads(), instance_id));
  for (const auto& runtime : runtimes_) {
    if (runtime) GPURENT_CHECK(runtime->remove_instance(instance_id));
  }
  return {};
}

void RuntimeSet::guest_gpu_samples(int64_t time_ms, std::vector<model::GpuSample>& out) {
  for (const auto& runtime : runtimes_) {
    if (runtime) runtime->guest_gpu_samples(time_ms, out);
  }
}

}  // namespace gpurent::agent
