// Simulated GPU telemetry: series driven by what runs on each GPU, plus injected faults
// (sim_faults.h).
//
// Per GPU and tick (dt = the time since the GPU's previous sample):
//   - a GPU a running workload holds is loaded 90-100% (small noise), an idle one 0%; utilisation
//     follows at once, memory-bandwidth utilisation is ~55% of it;
//   - power = idle + (TDP - idle) * load, with ~2% noise, at most the type's TDP (power-cap
//     throttle reason near it); idle GPUs report the idle throttle reason;
//   - temperature moves toward a load-dependent target, 30 C idle to 78 C fully loaded, with a
//     first-order lag (time constant kThermalTau: T += (target - T) * (1 - exp(-dt / tau))), so a
//     loaded GPU warms over a minute and an idle one cools down again; an overheat fault raises
//     the target to 96 C with a 5 s time constant, and past kSlowdownTemperatureC the thermal
//     slowdown reasons are set, the SM clock drops and power with it;
//   - framebuffer use moves (time constant 2 s) toward a share of the GPU's memory fixed per
//     holder (55-90%, from a hash of its instance id), and back to 0 when idle;
//   - SM clock 1980 MHz loaded / 345 idle, memory clock 2619 MHz (an H100's), PCIe traffic
//     ~150 MB/s out and ~900 MB/s in under load;
//   - ECC counts on data-centre types only (absent on "rtx..." cards); NVLink links up/total only
//     for GPUs that share an NVLink domain with another GPU (absent on a lone PCIe card).
// The noise comes from an Rng with the given seed, so a run is reproducible. With a faults file
// (a single node's; a fleet hands its nodes their faults with set_faults), every sample first
// re-reads it if it changed and applies the entries that name no node.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "agent/telemetry/sim_faults.h"
#include "agent/telemetry/source.h"
#include "common/random.h"
#include "model/node.h"

namespace gpurent::agent {

inline constexpr double kThermalTauS = 20.0;
inline constexpr double kOverheatTauS = 5.0;
inline constexpr double kIdleTemperatureC = 30.0;
inline constexpr double kLoadedTemperatureC = 78.0;
inline constexpr double kOverheatTemperatureC = 96.0;
inline constexpr double kSlowdownTemperatureC = 87.0;

class SimTelemetrySource final : public TelemetrySource {
 public:
  SimTelemetrySource(std::vector<model::Gpu> gpus, uint64_t seed,
                     std::optional<std::filesystem::path> faults_file = std::nullopt);

  // The faults in force for this node now (a fleet passes only its node's; the node field is not
  // looked at). A fault not in force before takes effect at the next sample.
  void set_faults(const std::vector<SimFault>& faults);
  void sample(int64_t time_ms, const BusyGpus& busy, model::TelemetryBatch& out) override;

 private:
  struct GpuState {
    model::Gpu gpu;
    double tdp_w = 0;
    std::optional<int64_t> nvlinks;  // links of an NVLinked GPU; nullopt: none
    bool ecc = false;
    std::optional<int64_t> last_time_ms;
    double temperature_c = kIdleTemperatureC;
    double fb_used_mib = 0;
    int64_t ecc_dbe = 0;
    bool overheat = false;
    bool silent = false;  // missing, or fell off the bus
    std::vector<int64_t> pending_xids;
  };
  struct Active {
    bool overheat = false;
    bool missing = false;
    bool fell_off = false;
  };

  double noise(double amplitude);
  GpuState* find(const std::string& gpu);

  std::vector<GpuState> gpus_;
  std::vector<SimFault> faults_;  // in force, to tell new ones apart
  std::optional<SimFaultsFile> faults_file_;
  Rng rng_;
};

}  // namespace gpurent::agent
