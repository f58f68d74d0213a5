// The runtimes of one node behind the one Runtime the reconciler drives: a workload whose spec
// names an image runs in the container runtime, any other in the process runtime. A node without
// a container engine configured refuses image workloads at start (code "no_container_runtime"),
// which the reconciler reports as a failed start with that reason.
#pragma once

#include <memory>

#include "agent/runtime/runtime.h"

namespace gpurent::agent {

class RuntimeSet final : public Runtime {
 public:
  // containers may be null (no engine on this node).
  RuntimeSet(std::unique_ptr<Runtime> processes, std::unique_ptr<Runtime> containers);

  Status start(const model::WorkloadSpec& spec) override;
  void stop(const WorkloadKey& key) override;
  Status forget(const WorkloadKey& key) override;
  void poll() override;
  std::vector<Workload> workloads() const override;
  const Workload* find(const WorkloadKey& key) const override;
  std::optional<SteadyTime> next_deadline() const override;
  // Both runtimes keep an instance's directory under the same data directory.
  std::filesystem::path instance_dir(std::string_view instance_id) const override;

 private:
  // The runtime that tracks the run, if any.
  Runtime* owner(const WorkloadKey& key) const;

  std::unique_ptr<Runtime> processes_;
  std::unique_ptr<Runtime> containers_;
};

}  // namespace gpurent::agent
