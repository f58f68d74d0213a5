#include "agent/runtime/runtime_set.h"

#include <algorithm>

namespace gpurent::agent {

RuntimeSet::RuntimeSet(std::unique_ptr<Runtime> processes, std::unique_ptr<Runtime> containers)
    : processes_(std::move(processes)), containers_(std::move(containers)) {}

Runtime* RuntimeSet::owner(const WorkloadKey& key) const {
  if (processes_->find(key)) return processes_.get();
  if (containers_ && containers_->find(key)) return containers_.get();
  return nullptr;
}

Status RuntimeSet::start(const model::WorkloadSpec& spec) {
  // A run is unique across both: the same key in the other runtime is a duplicate too.
  if (owner({spec.instance_id, spec.run})) {
    return fail(Error::conflict("workload_exists", "the workload already exists"));
  }
  if (spec.image.empty()) return processes_->start(spec);
  if (!containers_) {
    return fail(Error::unprocessable(
        "no_container_runtime",
        "this node has no container engine (start its agent with --container-socket)"));
  }
  return containers_->start(spec);
}

void RuntimeSet::stop(const WorkloadKey& key) {
  if (Runtime* runtime = owner(key)) runtime->stop(key);
}

Status RuntimeSet::forget(const WorkloadKey& key) {
  Runtime* runtime = owner(key);
  return runtime ? runtime->forget(key) : Status{};
}

void RuntimeSet::poll() {
  processes_->poll();
  if (containers_) containers_->poll();
}

std::vector<Workload> RuntimeSet::workloads() const {
  auto all = processes_->workloads();
  if (containers_) {
    auto more = containers_->workloads();
    all.insert(all.end(), std::make_move_iterator(more.begin()),
               std::make_move_iterator(more.end()));
  }
  return all;
}

const Workload* RuntimeSet::find(const WorkloadKey& key) const {
  if (const Workload* found = processes_->find(key)) return found;
  return containers_ ? containers_->find(key) : nullptr;
}

std::optional<Runtime::SteadyTime> RuntimeSet::next_deadline() const {
  auto next = processes_->next_deadline();
  if (containers_) {
    if (const auto other = containers_->next_deadline(); other && (!next || *other < *next)) {
      next = other;
    }
  }
  return next;
}

std::filesystem::path RuntimeSet::instance_dir(std::string_view instance_id) const {
  return processes_->instance_dir(instance_id);
}

}  // namespace gpurent::agent
