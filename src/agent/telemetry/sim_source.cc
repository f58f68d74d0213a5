#include "agent/telemetry/sim_source.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string_view>

namespace gpurent::agent {
namespace {

constexpr double kIdleShareOfTdp = 0.1;
constexpr double kFbTauS = 2.0;
// A process holds its CUDA context from its first kernel on, before its own allocations ramp up
// over kFbTauS; utilisation without any memory used is what no real GPU reports.
constexpr double kCudaContextMib = 500;
constexpr int64_t kSmClockLoadedMhz = 1'980;
constexpr int64_t kSmClockIdleMhz = 345;
constexpr int64_t kMemClockMhz = 2'619;
constexpr double kThrottledClockShare = 0.55;

// Board power limits of the catalog's types; others get kDefaultTdpW.
constexpr double kDefaultTdpW = 300;
const std::map<std::string_view, double>& tdp_table() {
  static const std::map<std::string_view, double> table = {
      {"h200-141g", 700}, {"h100-80g", 700}, {"h800-80g", 700},   {"a100-80g", 400},
      {"a100-40g", 400},  {"a800-80g", 400}, {"v100-32g", 300},   {"l40s-48g", 350},
      {"l4-24g", 72},     {"a10-24g", 150},  {"rtx4090-24g", 450}};
  return table;
}

// NVLink links per GPU of the NVSwitch generations; a bridged PCIe pair has kBridgeLinks.
constexpr int64_t kBridgeLinks = 4;
int64_t nvlinks_of(std::string_view type) {
  if (type.starts_with("h")) return 18;
  if (type.starts_with("a100") || type.starts_with("a800")) return 12;
  if (type.starts_with("v100")) return 6;
  return kBridgeLinks;
}

double approach(double value, double target, double dt_s, double tau_s) {
  return value + (target - value) * (1.0 - std::exp(-dt_s / tau_s));
}

}  // namespace

SimTelemetrySource::SimTelemetrySource(std::vector<model::Gpu> gpus, uint64_t seed,
                                       std::optional<std::filesystem::path> faults_file)
    : rng_(seed) {
  if (faults_file) faults_file_.emplace(std::move(*faults_file));
  std::map<int, int> per_domain;
  for (const auto& gpu : gpus) ++per_domain[gpu.nvlink_domain];
  for (auto& gpu : gpus) {
    GpuState state;
    const auto tdp = tdp_table().find(gpu.type);
    state.tdp_w = tdp == tdp_table().end() ? kDefaultTdpW : tdp->second;
    if (gpu.nvlink_domain >= 0 && per_domain[gpu.nvlink_domain] > 1) {
      state.nvlinks = nvlinks_of(gpu.type);
    }
    state.ecc = !gpu.type.starts_with("rtx");
    state.temperature_c = kIdleTemperatureC + noise(1.0);
    state.gpu = std::move(gpu);
    gpus_.push_back(std::move(state));
  }
}

double SimTelemetrySource::noise(double amplitude) {
  // Uniform in [-amplitude, amplitude], in 1/1000 steps.
  return (static_cast<double>(rng_.uniform(2'001)) / 1'000.0 - 1.0) * amplitude;
}

SimTelemetrySource::GpuState* SimTelemetrySource::find(const std::string& gpu) {
  for (auto& state : gpus_) {
    if (state.gpu.uuid == gpu || std::to_string(state.gpu.index) == gpu) return &state;
  }
  return nullptr;
}

void SimTelemetrySource::set_faults(const std::vector<SimFault>& faults) {
  std::map<const GpuState*, Active> active;
  for (const auto& fault : faults) {
    GpuState* state = find(fault.gpu);
    if (!state) continue;
    const bool fresh = std::none_of(faults_.begin(), faults_.end(), [&](const SimFault& old) {
      return old.gpu == fault.gpu && old.kind == fault.kind && old.xid_code == fault.xid_code;
    });
    Active& now = active[state];
    switch (fault.kind) {
      case SimFaultKind::kOverheat:
        now.overheat = true;
        break;
      case SimFaultKind::kXid:
        if (fresh) state->pending_xids.push_back(fault.xid_code);
        now.fell_off = now.fell_off || fault.xid_code == kXidFellOffTheBus;
        break;
      case SimFaultKind::kEccDoubleBit:
        if (fresh && state->ecc) {
          ++state->ecc_dbe;
          state->pending_xids.push_back(kXidDoubleBitEcc);
        }
        break;
      case SimFaultKind::kMissing:
        now.missing = true;
        break;
    }
  }
  for (auto& state : gpus_) {
    const Active now = active[&state];
    state.overheat = now.overheat;
    state.silent = now.missing || now.fell_off;
  }
  faults_ = faults;
}

void SimTelemetrySource::sample(int64_t time_ms, const BusyGpus& busy, model::TelemetryBatch& out) {
  if (faults_file_ && faults_file_->refresh()) {
    std::vector<SimFault> mine;
    for (const auto& fault : faults_file_->faults()) {
      if (!fault.node) mine.push_back(fault);
    }
    set_faults(mine);
  }
  for (auto& state : gpus_) {
    // The XID is raised even by a GPU that falls off the bus with it (it is how the driver says
    // so).
    for (const int64_t code : state.pending_xids)
      out.xids.push_back({state.gpu.uuid, time_ms, code});
    state.pending_xids.clear();
    const double dt_s =
        state.last_time_ms
            ? std::max<double>(0, static_cast<double>(time_ms - *state.last_time_ms)) / 1e3
            : 0.0;
    state.last_time_ms = time_ms;
    const auto holder = busy.find(state.gpu.uuid);
    const bool loaded = holder != busy.end();
    const double load = loaded ? std::clamp(0.95 + noise(0.05), 0.0, 1.0) : 0.0;

    const double target =
        state.overheat ? kOverheatTemperatureC
                       : kIdleTemperatureC + (kLoadedTemperatureC - kIdleTemperatureC) * load;
    state.temperature_c =
        approach(state.temperature_c, target, dt_s, state.overheat ? kOverheatTauS : kThermalTauS);
    double fb_target = 0;
    if (loaded) {
      const double share =
          0.55 +
          0.35 * static_cast<double>(std::hash<std::string>{}(holder->second) % 1'000) / 1'000.0;
      fb_target = share * static_cast<double>(state.gpu.memory_mb);
    }
    state.fb_used_mib = approach(state.fb_used_mib, fb_target, dt_s, kFbTauS);
    if (loaded) state.fb_used_mib = std::max(state.fb_used_mib, kCudaContextMib);
    if (state.silent) continue;

    const bool hot = state.temperature_c >= kSlowdownTemperatureC;
    const double idle_w = state.tdp_w * kIdleShareOfTdp;
    double power = idle_w + (state.tdp_w - idle_w) * load;
    power = std::min(state.tdp_w, power * (1.0 + noise(0.02)));
    if (hot) power *= kThrottledClockShare;
    int64_t throttle = 0;
    if (!loaded) throttle |= model::kThrottleGpuIdle;
    if (power >= 0.97 * state.tdp_w) throttle |= model::kThrottleSwPowerCap;
    if (hot) throttle |= model::kThrottleHwThermalSlowdown | model::kThrottleSwThermalSlowdown;
    int64_t sm_clock = loaded ? kSmClockLoadedMhz : kSmClockIdleMhz;
    if (hot) sm_clock = static_cast<int64_t>(static_cast<double>(sm_clock) * kThrottledClockShare);
    const auto util = static_cast<int64_t>(std::lround(load * 100));
    const auto fb_used = static_cast<int64_t>(std::lround(state.fb_used_mib));

    model::GpuSample sample{.uuid = state.gpu.uuid, .time_ms = time_ms};
    sample.gpu_util_pct = util;
    sample.mem_util_pct =
        std::clamp<int64_t>(std::lround(static_cast<double>(util) * 0.55 + noise(2.0)), 0, 100);
    sample.fb_used_mib = fb_used;
    sample.fb_free_mib = std::max<int64_t>(0, state.gpu.memory_mb - fb_used);
    sample.temperature_c = std::lround(state.temperature_c + noise(0.3));
    sample.power_w = std::round(power * 10) / 10;  // NVML's milliwatts, to 0.1 W on the wire
    sample.sm_clock_mhz = sm_clock;
    sample.mem_clock_mhz = kMemClockMhz;
    sample.pcie_tx_kbps = std::lround((loaded ? 150'000 : 100) * (1.0 + noise(0.1)));
    sample.pcie_rx_kbps = std::lround((loaded ? 900'000 : 200) * (1.0 + noise(0.1)));
    sample.throttle_reasons = throttle;
    if (state.ecc) {
      sample.ecc_sbe_total = 0;
      sample.ecc_dbe_total = state.ecc_dbe;
    }
    if (state.nvlinks) {
      sample.nvlink_up = *state.nvlinks;
      sample.nvlink_total = *state.nvlinks;
    }
    out.samples.push_back(std::move(sample));
  }
}

}  // namespace gpurent::agent
