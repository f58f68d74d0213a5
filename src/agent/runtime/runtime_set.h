// The runtimes of one node behind the one Runtime the reconciler drives: a workload whose spec
// asks for a VM runs in the VM runtime, one that names an image in the container runtime, any
// other in the process runtime. A node without the runtime a spec needs refuses it at start (code
// "no_container_runtime" or "no_vm_runtime"), which the reconciler reports as a failed start with
// that reason.
#pragma once

#include <array>
#include <memory>

#include "agent/runtime/runtime.h"

namespace gpurent::agent {

class RuntimeSet final : public Runtime {
 public:
  // containers and vms may be null (no engine, no VMs on this node).
  RuntimeSet(std::unique_ptr<Runtime> processes, std::unique_ptr<Runtime> containers,
             std::unique_ptr<Runtime> vms = nullptr);

  Status start(const model::WorkloadSpec& spec) override;
  void stop(const WorkloadKey& key) override;
  Status forget(const WorkloadKey& key) override;
  void poll() override;
  std::vector<Workload> workloads() const override;
  const Workload* find(const WorkloadKey& key) const override;
  std::optional<SteadyTime> next_deadline() const override;
  // Every runtime keeps an instance's directory under the same place (the process runtime's).
  std::filesystem::path instance_dir(std::string_view instance_id) const override;
  // Every runtime's files of the instance, once no runtime runs it.
  Status remove_instance(std::string_view instance_id) override;
  void guest_gpu_samples(int64_t time_ms, std::vector<model::GpuSample>& out) override;

 private:
  // The runtime that tracks the run, if any.
  Runtime* owner(const WorkloadKey& key) const;

  // The process runtime first (never null), then the container and VM runtimes (null: none).
  std::array<std::unique_ptr<Runtime>, 3> runtimes_;
};

}  // namespace gpurent::agent
