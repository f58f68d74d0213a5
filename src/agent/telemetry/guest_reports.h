// A telemetry source completed by what workloads report of their GPUs from inside: a GPU passed
// through to a VM is gone from the host's NVML, and its guest reports it instead
// (agent/vm/guest_gpu_report.h). A GPU the host's source sampled keeps the host's sample; a GPU it
// did not gets the guest's, when one arrived since the last tick.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "agent/telemetry/source.h"

namespace gpurent::agent {

class WithGuestReports final : public TelemetrySource {
 public:
  // Appends the samples that arrived since its last call, stamped time_ms
  // (Runtime::guest_gpu_samples).
  using GuestSamples = std::function<void(int64_t time_ms, std::vector<model::GpuSample>& out)>;

  WithGuestReports(std::unique_ptr<TelemetrySource> host, GuestSamples guest)
      : host_(std::move(host)), guest_(std::move(guest)) {}

  void sample(int64_t time_ms, const BusyGpus& busy, model::TelemetryBatch& out) override;

 private:
  std::unique_ptr<TelemetrySource> host_;
  GuestSamples guest_;
};

}  // namespace gpurent::agent
