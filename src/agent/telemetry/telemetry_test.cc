#include "agent/telemetry/telemetry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "agent/gpu/sim_gpus.h"
#include "agent/telemetry/guest_reports.h"
#include "agent/telemetry/nvml_source.h"
#include "agent/telemetry/sim_faults.h"
#include "agent/telemetry/sim_source.h"
#include "agent/test_util.h"

namespace gpurent::agent {
namespace {

using testing::TempDir;

std::vector<model::Gpu> gpus(std::string_view spec) {
  auto layout = sim_gpu_layout(spec);
  EXPECT_TRUE(layout);
  for (auto& gpu : *layout) gpu.uuid = "GPU-" + std::to_string(gpu.index);
  return *layout;
}

// Samples `source` every second for `seconds`, returning the last sample of each GPU.
std::map<std::string, model::GpuSample> run(SimTelemetrySource& source, int64_t& time_ms,
                                            int seconds, const BusyGpus& busy,
                                            model::TelemetryBatch* all = nullptr) {
  std::map<std::string, model::GpuSample> last;
  for (int s = 0; s < seconds; ++s) {
    model::TelemetryBatch batch;
    source.sample(time_ms, busy, batch);
    for (const auto& sample : batch.samples) last[sample.uuid] = sample;
    if (all) {
      all->samples.insert(all->samples.end(), batch.samples.begin(), batch.samples.end());
      all->xids.insert(all->xids.end(), batch.xids.begin(), batch.xids.end());
    }
    time_ms += 1'000;
  }
  return last;
}

TEST(SimTelemetry, LoadWarmsAGpuAndIdleCoolsItDown) {
  SimTelemetrySource source(gpus("2xh100-80g"), 42);
  int64_t time = 1'000'000;
  const BusyGpus busy = {{"GPU-0", "i-1"}};
  auto after_10s = run(source, time, 10, busy);
  auto loaded = after_10s["GPU-0"];
  auto idle = after_10s["GPU-1"];
  EXPECT_GE(*loaded.gpu_util_pct, 90);
  EXPECT_EQ(*idle.gpu_util_pct, 0);
  EXPECT_GT(*loaded.power_w, 500.0);
  EXPECT_LT(*idle.power_w, 100.0);
  EXPECT_GT(*loaded.fb_used_mib, 40'000);  // the workload's share of 80 GB
  EXPECT_EQ(*idle.fb_used_mib, 0);
  EXPECT_EQ(*idle.throttle_reasons & model::kThrottleGpuIdle, model::kThrottleGpuIdle);
  // The thermal lag: warmer, but not yet at the loaded temperature after 10 s.
  EXPECT_GT(*loaded.temperature_c, 40);
  EXPECT_LT(*loaded.temperature_c, 70);
  const auto after_2min = run(source, time, 110, busy);
  EXPECT_GE(after_2min.at("GPU-0").temperature_c, 75);
  EXPECT_LE(after_2min.at("GPU-1").temperature_c, 32);
  // Idle again: it cools down, with the same lag.
  const auto cooled = run(source, time, 60, {});
  EXPECT_LT(*cooled.at("GPU-0").temperature_c, 45);
  EXPECT_EQ(*cooled.at("GPU-0").gpu_util_pct, 0);
  // NVSwitch GPUs have NVLink and ECC.
  EXPECT_EQ(cooled.at("GPU-0").nvlink_total, 18);
  EXPECT_EQ(cooled.at("GPU-0").ecc_dbe_total, 0);
}

TEST(SimTelemetry, ABusyGpuHoldsMemoryFromItsFirstSample) {
  SimTelemetrySource source(gpus("1xh100-80g"), 7);
  int64_t time = 1'000'000;
  run(source, time, 5, {});
  // Two samples in the same millisecond: no time for the allocations to ramp up, yet the
  // process's context is there as soon as the GPU is busy.
  time -= 1'000;
  const auto first = run(source, time, 1, {{"GPU-0", "i-1"}});
  EXPECT_GE(*first.at("GPU-0").gpu_util_pct, 90);
  EXPECT_GE(*first.at("GPU-0").fb_used_mib, 500);
}

TEST(SimTelemetry, UnsupportedFieldsAreAbsent) {
  SimTelemetrySource source(gpus("1xrtx4090-24g"), 1);
  model::TelemetryBatch batch;
  source.sample(1, {}, batch);
  ASSERT_EQ(batch.samples.size(), 1u);
  EXPECT_FALSE(batch.samples[0].nvlink_up.has_value());      // a lone PCIe card
  EXPECT_FALSE(batch.samples[0].ecc_dbe_total.has_value());  // a consumer card
  EXPECT_TRUE(batch.samples[0].temperature_c.has_value());
}

TEST(SimTelemetry, SameSeedSameSeries) {
  SimTelemetrySource a(gpus("2xh100-80g"), 7);
  SimTelemetrySource b(gpus("2xh100-80g"), 7);
  model::TelemetryBatch from_a;
  model::TelemetryBatch from_b;
  int64_t ta = 0;
  int64_t tb = 0;
  run(a, ta, 20, {{"GPU-1", "i-x"}}, &from_a);
  run(b, tb, 20, {{"GPU-1", "i-x"}}, &from_b);
  EXPECT_EQ(from_a, from_b);
}

TEST(SimTelemetry, InjectedFaults) {
  SimTelemetrySource source(gpus("4xh100-80g"), 3);
  int64_t time = 0;
  run(source, time, 5, {});
  source.set_faults({{.gpu = "0", .kind = SimFaultKind::kOverheat},
                     {.gpu = "GPU-1", .kind = SimFaultKind::kXid, .xid_code = 79},
                     {.gpu = "2", .kind = SimFaultKind::kEccDoubleBit},
                     {.gpu = "3", .kind = SimFaultKind::kMissing}});
  model::TelemetryBatch all;
  const auto last = run(source, time, 30, {}, &all);
  // XID 79 once, then GPU 1 is silent; the ECC error raises XID 48 once; GPU 3 is gone.
  ASSERT_EQ(all.xids.size(), 2u);
  EXPECT_EQ(all.xids[0], (model::XidEvent{"GPU-1", 5'000, 79}));
  EXPECT_EQ(all.xids[1], (model::XidEvent{"GPU-2", 5'000, 48}));
  EXPECT_FALSE(last.contains("GPU-1"));
  EXPECT_FALSE(last.contains("GPU-3"));
  EXPECT_EQ(last.at("GPU-2").ecc_dbe_total, 1);
  const auto& hot = last.at("GPU-0");
  EXPECT_GE(*hot.temperature_c, kSlowdownTemperatureC);
  EXPECT_NE(*hot.throttle_reasons & model::kThrottleHwThermalSlowdown, 0);
  EXPECT_LT(*hot.sm_clock_mhz, 345);
  // The same faults again change nothing; cleared, the GPUs answer again and the hot one cools.
  source.set_faults({{.gpu = "2", .kind = SimFaultKind::kEccDoubleBit}});
  model::TelemetryBatch later;
  const auto healed = run(source, time, 60, {}, &later);
  EXPECT_TRUE(later.xids.empty());
  EXPECT_TRUE(healed.contains("GPU-1"));
  EXPECT_TRUE(healed.contains("GPU-3"));
  EXPECT_EQ(healed.at("GPU-2").ecc_dbe_total, 1);  // a total: it stays
  EXPECT_LT(*healed.at("GPU-0").temperature_c, 60);
}

TEST(SimTelemetry, FaultsFileIsReReadWhenItChanges) {
  TempDir dir;
  const auto path = dir.path() / kSimFaultsFile;
  SimTelemetrySource source(gpus("2xh100-80g"), 3, path);
  int64_t time = 0;
  model::TelemetryBatch all;
  run(source, time, 2, {}, &all);
  std::ofstream(path) << R"({"faults": [{"gpu": 1, "kind": "xid", "code": 79},
                                        {"node": 4, "gpu": 0, "kind": "missing"}]})";
  run(source, time, 2, {}, &all);
  ASSERT_EQ(all.xids.size(), 1u);
  EXPECT_EQ(all.xids[0].code, 79);
  std::filesystem::remove(path);
  const auto last = run(source, time, 1, {}, &all);
  EXPECT_EQ(last.size(), 2u);  // the entry naming a node is a fleet's, not this agent's
}

TEST(SimFaults, ParseErrors) {
  EXPECT_TRUE(parse_sim_faults(R"({"faults": []})"));
  EXPECT_TRUE(parse_sim_faults(R"({})"));
  for (const char* bad :
       {R"({"faults": [{"kind": "overheat"}]})", R"({"faults": [{"gpu": 0, "kind": "melt"}]})",
        R"({"faults": [{"gpu": 0, "kind": "xid", "code": "x"}]})", R"({"faults": {}})", "[]"}) {
    const auto parsed = parse_sim_faults(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().code, "invalid_sim_faults") << bad;
  }
}

model::TelemetryBatch samples(int64_t from, int64_t count) {
  model::TelemetryBatch batch;
  for (int64_t t = from; t < from + count; ++t)
    batch.samples.push_back({.uuid = "g", .time_ms = t});
  return batch;
}

TEST(TelemetryBacklog, KeepsTheNewestAndCountsDrops) {
  TelemetryBacklog backlog(10, 2);
  backlog.add(samples(0, 25));
  auto xids = model::TelemetryBatch{};
  xids.xids = {{"g", 1, 79}, {"g", 2, 48}, {"g", 3, 13}};
  backlog.add(xids);
  EXPECT_EQ(backlog.samples(), 10u);
  EXPECT_EQ(backlog.dropped(), 16);  // 15 samples and one XID
  const auto pending = backlog.next(4, 10);
  ASSERT_EQ(pending.batch.samples.size(), 4u);
  EXPECT_EQ(pending.batch.samples.front().time_ms, 15);  // oldest kept first
  EXPECT_EQ(pending.batch.xids.front().code, 48);
  EXPECT_EQ(pending.batch.dropped, 16);
  backlog.taken(pending);
  EXPECT_EQ(backlog.samples(), 6u);
  EXPECT_EQ(backlog.next().batch.samples.front().time_ms, 19);
}

TEST(TelemetryBacklog, ReplaysInOrderInBoundedBatches) {
  TelemetryBacklog backlog(kTelemetryBacklogSamples, kTelemetryBacklogXids);
  backlog.add(samples(0, 5'000));
  int64_t expected = 0;
  int batches = 0;
  while (backlog.samples() > 0) {
    const auto pending = backlog.next();
    ASSERT_LE(pending.batch.samples.size(), model::kMaxTelemetrySamples);
    for (const auto& sample : pending.batch.samples) EXPECT_EQ(sample.time_ms, expected++);
    backlog.taken(pending);
    ++batches;
  }
  EXPECT_EQ(batches, 3);
  EXPECT_EQ(expected, 5'000);
}

TEST(TelemetryBacklog, TakenRemovesOnlyWhatWasSentEvenAfterDrops) {
  TelemetryBacklog backlog(10, 10);
  backlog.add(samples(0, 10));
  const auto pending = backlog.next(6, 10);  // 0..5 in flight
  backlog.add(samples(10, 4));               // drops 0..3 meanwhile
  backlog.taken(pending);                    // 4 and 5 were sent too
  ASSERT_EQ(backlog.samples(), 8u);
  EXPECT_EQ(backlog.next().batch.samples.front().time_ms, 6);
}

class CountingSource final : public TelemetrySource {
 public:
  void sample(int64_t time_ms, const BusyGpus&, model::TelemetryBatch& out) override {
    out.samples.push_back({.uuid = "g", .time_ms = time_ms});
  }
};

TEST(WithGuestReports, AGuestsSampleFillsInOnlyForAGpuTheHostDidNotSample) {
  std::vector<int64_t> asked;
  WithGuestReports source(std::make_unique<CountingSource>(),
                          [&](int64_t time_ms, std::vector<model::GpuSample>& out) {
                            asked.push_back(time_ms);
                            out.push_back({.uuid = "g", .time_ms = time_ms, .gpu_util_pct = 1});
                            out.push_back({.uuid = "in-vm", .time_ms = time_ms, .gpu_util_pct = 2});
                          });
  model::TelemetryBatch batch;
  // An earlier tick's sample of the GPU in the VM (a catch-up batch) does not hide this one.
  batch.samples.push_back({.uuid = "in-vm", .time_ms = 4'000});
  source.sample(5'000, {}, batch);
  EXPECT_EQ(asked, std::vector<int64_t>{5'000});
  EXPECT_EQ(batch.samples,
            (std::vector<model::GpuSample>{{.uuid = "in-vm", .time_ms = 4'000},
                                           {.uuid = "g", .time_ms = 5'000},
                                           {.uuid = "in-vm", .time_ms = 5'000, .gpu_util_pct = 2}}))
      << "the host's own sample of g stands";
}

TEST(NodeTelemetry, SamplesOnTheTickGridAndCatchesUpWhenAsked) {
  using std::chrono::milliseconds;
  const NodeTelemetry::SteadyTime start{std::chrono::seconds(100)};
  NodeTelemetry live(std::make_unique<CountingSource>(), milliseconds(1'000));
  live.tick(start, 0, {});
  live.tick(start + milliseconds(500), 500, {});  // not due
  live.tick(start + milliseconds(3'200), 3'200, {});
  EXPECT_EQ(live.backlog().samples(), 2u);  // a late caller gets one sample
  EXPECT_EQ(live.next_due(), start + milliseconds(4'000));
  const auto taken_late = live.backlog().next().batch;
  ASSERT_EQ(taken_late.samples.size(), 2u);
  EXPECT_EQ(taken_late.samples[1].time_ms, 3'000);  // the 3 s tick's, though taken at 3.2 s

  NodeTelemetry fleet(std::make_unique<CountingSource>(), milliseconds(1'000), 100, 10, true);
  fleet.tick(start, 0, {});
  fleet.tick(start + milliseconds(3'200), 3'200, {});
  const auto batch = fleet.backlog().next().batch;
  ASSERT_EQ(batch.samples.size(), 4u);  // 0, then the ticks due at 1, 2 and 3 s
  // Each is stamped with its tick, not with the late moment it was taken.
  EXPECT_EQ(batch.samples[1].time_ms, 1'000);
  EXPECT_EQ(batch.samples[3].time_ms, 3'000);
}

// A fake NVML: what each call answers is set per test.
struct FakeNvml {
  static inline nvml::nvmlReturn_t utilization_rc = nvml::NVML_SUCCESS;
  static inline int links = 4;
  static inline std::vector<unsigned long long> xids;

  static nvml::nvmlDevice_t device(int i) {
    return reinterpret_cast<nvml::nvmlDevice_t>(static_cast<uintptr_t>(0x1000 + i));
  }
  static nvml::nvmlReturn_t utilization(nvml::nvmlDevice_t, nvml::nvmlUtilization_t* out) {
    *out = {87, 41};
    return utilization_rc;
  }
  static nvml::nvmlReturn_t memory(nvml::nvmlDevice_t, nvml::nvmlMemory_t* out) {
    *out = {80ull << 30, 20ull << 30, 60ull << 30};
    return nvml::NVML_SUCCESS;
  }
  static nvml::nvmlReturn_t temperature(nvml::nvmlDevice_t, int sensor, unsigned* out) {
    *out = 66;
    return sensor == nvml::NVML_TEMPERATURE_GPU ? nvml::NVML_SUCCESS
                                                : nvml::NVML_ERROR_INVALID_ARGUMENT;
  }
  static nvml::nvmlReturn_t power(nvml::nvmlDevice_t, unsigned* out) {
    *out = 612'345;
    return nvml::NVML_SUCCESS;
  }
  static nvml::nvmlReturn_t not_supported(nvml::nvmlDevice_t, int, unsigned*) {
    return nvml::NVML_ERROR_NOT_SUPPORTED;
  }
  static nvml::nvmlReturn_t nvlink(nvml::nvmlDevice_t, unsigned link, int* active) {
    if (static_cast<int>(link) >= links) return nvml::NVML_ERROR_INVALID_ARGUMENT;
    *active = link == 2 ? 0 : nvml::NVML_FEATURE_ENABLED;
    return nvml::NVML_SUCCESS;
  }
  static nvml::nvmlReturn_t create(nvml::nvmlEventSet_t* set) {
    *set = reinterpret_cast<nvml::nvmlEventSet_t>(0x42);
    return nvml::NVML_SUCCESS;
  }
  static nvml::nvmlReturn_t register_events(nvml::nvmlDevice_t, unsigned long long,
                                            nvml::nvmlEventSet_t) {
    return nvml::NVML_SUCCESS;
  }
  static nvml::nvmlReturn_t wait(nvml::nvmlEventSet_t, nvml::nvmlEventData_t* data,
                                 unsigned timeout_ms) {
    if (timeout_ms != 0 || xids.empty()) return nvml::NVML_ERROR_TIMEOUT;
    *data = {device(1), nvml::nvmlEventTypeXidCriticalError, xids.front(), 0, 0};
    xids.erase(xids.begin());
    return nvml::NVML_SUCCESS;
  }
  // The GPUs nvmlDeviceGetHandleByUUID finds ("GPU-a" is device 0, "GPU-b" device 1), and the
  // handles registered for events.
  static inline std::vector<std::string> known;
  static inline std::vector<nvml::nvmlDevice_t> registered;
  static nvml::nvmlReturn_t by_uuid(const char* uuid, nvml::nvmlDevice_t* out) {
    const auto it = std::ranges::find(known, std::string(uuid));
    if (it == known.end()) return nvml::NVML_ERROR_NOT_FOUND;
    *out = device(std::string_view(uuid) == "GPU-a" ? 0 : 1);
    return nvml::NVML_SUCCESS;
  }
  static nvml::nvmlReturn_t register_recorded(nvml::nvmlDevice_t device, unsigned long long,
                                              nvml::nvmlEventSet_t) {
    registered.push_back(device);
    return nvml::NVML_SUCCESS;
  }
  static inline int freed = 0;
  static nvml::nvmlReturn_t free_set(nvml::nvmlEventSet_t) {
    ++freed;
    return nvml::NVML_SUCCESS;
  }
  // The utilisation and the XID event calls; each test adds what else it needs.
  static NvmlTelemetryApi api() {
    NvmlTelemetryApi api;
    api.utilization_rates = &utilization;
    api.event_set_create = &create;
    api.register_events = &register_events;
    api.event_set_wait = &wait;
    api.event_set_free = &free_set;
    return api;
  }
};

TEST(NvmlTelemetry, FakeTableFieldsAndEvents) {
  NvmlTelemetryApi api = FakeNvml::api();
  api.memory_info = &FakeNvml::memory;
  api.temperature = &FakeNvml::temperature;
  api.power_usage = &FakeNvml::power;
  api.clock_info = &FakeNvml::not_supported;  // NOT_SUPPORTED: absent
  api.nvlink_state = &FakeNvml::nvlink;
  // pcie_throughput, throttle_reasons, total_ecc_errors: missing symbols, absent.
  FakeNvml::xids = {79, 31};
  bool closed = false;
  {
    NvmlTelemetrySource source(api,
                               {{"GPU-a", FakeNvml::device(0)}, {"GPU-b", FakeNvml::device(1)}},
                               [&] { closed = true; });
    model::TelemetryBatch batch;
    source.sample(5'000, {}, batch);
    ASSERT_EQ(batch.samples.size(), 2u);
    const auto& s = batch.samples[0];
    EXPECT_EQ(s.gpu_util_pct, 87);
    EXPECT_EQ(s.mem_util_pct, 41);
    EXPECT_EQ(s.fb_used_mib, 60 * 1024);
    EXPECT_EQ(s.fb_free_mib, 20 * 1024);
    EXPECT_EQ(s.temperature_c, 66);
    EXPECT_EQ(s.power_w, 612.3);
    EXPECT_FALSE(s.sm_clock_mhz.has_value());
    EXPECT_FALSE(s.pcie_tx_kbps.has_value());
    EXPECT_FALSE(s.throttle_reasons.has_value());
    EXPECT_FALSE(s.ecc_dbe_total.has_value());
    EXPECT_EQ(s.nvlink_total, 4);
    EXPECT_EQ(s.nvlink_up, 3);
    EXPECT_EQ(batch.xids,
              (std::vector<model::XidEvent>{{"GPU-b", 5'000, 79}, {"GPU-b", 5'000, 31}}));

    // A GPU that is lost yields no sample; a card without NVLink has no link fields.
    FakeNvml::utilization_rc = nvml::NVML_ERROR_GPU_IS_LOST;
    FakeNvml::links = 0;
    model::TelemetryBatch lost;
    source.sample(6'000, {}, lost);
    EXPECT_TRUE(lost.samples.empty());
    FakeNvml::utilization_rc = nvml::NVML_ERROR_NOT_SUPPORTED;
    model::TelemetryBatch partial;
    source.sample(7'000, {}, partial);
    ASSERT_EQ(partial.samples.size(), 2u);
    EXPECT_FALSE(partial.samples[0].gpu_util_pct.has_value());
    EXPECT_FALSE(partial.samples[0].nvlink_total.has_value());
    EXPECT_TRUE(partial.xids.empty());
    FakeNvml::utilization_rc = nvml::NVML_SUCCESS;
  }
  EXPECT_TRUE(closed);
  EXPECT_EQ(FakeNvml::freed, 1);
}

// A GPU in a VM (bound to vfio-pci) is not NVML's: no handle, no sample, until a tick finds it
// again; one that is lost is looked for again too.
TEST(NvmlTelemetry, AGpuNvmlDoesNotKnowIsLookedForAtEachTick) {
  NvmlTelemetryApi api = FakeNvml::api();
  api.register_events = &FakeNvml::register_recorded;
  api.handle_by_uuid = &FakeNvml::by_uuid;
  FakeNvml::known = {"GPU-a"};
  FakeNvml::registered.clear();
  NvmlTelemetrySource source(api, {{"GPU-a", FakeNvml::device(0)}, {"GPU-b", nullptr}});
  const auto sampled = [&](int64_t t) {
    model::TelemetryBatch batch;
    source.sample(t, {}, batch);
    std::vector<std::string> uuids;
    for (const auto& sample : batch.samples) uuids.push_back(sample.uuid);
    return uuids;
  };
  EXPECT_EQ(sampled(1'000), std::vector<std::string>{"GPU-a"});
  EXPECT_EQ(FakeNvml::registered, std::vector<nvml::nvmlDevice_t>{FakeNvml::device(0)});
  // The VM gave GPU-b back: found, sampled, registered for XID events.
  FakeNvml::known = {"GPU-a", "GPU-b"};
  EXPECT_EQ(sampled(2'000), (std::vector<std::string>{"GPU-a", "GPU-b"}));
  EXPECT_EQ(FakeNvml::registered,
            (std::vector<nvml::nvmlDevice_t>{FakeNvml::device(0), FakeNvml::device(1)}));
  // Both lost (GPU-a went into a VM): no samples, and no handle kept for either.
  FakeNvml::utilization_rc = nvml::NVML_ERROR_GPU_IS_LOST;
  FakeNvml::known = {"GPU-b"};
  EXPECT_EQ(sampled(3'000), std::vector<std::string>{});
  FakeNvml::utilization_rc = nvml::NVML_SUCCESS;
  EXPECT_EQ(sampled(4'000), std::vector<std::string>{"GPU-b"}) << "GPU-a is not found";
  FakeNvml::known = {"GPU-a", "GPU-b"};
  EXPECT_EQ(sampled(5'000), (std::vector<std::string>{"GPU-a", "GPU-b"}));
}

TEST(NvmlTelemetry, WithoutTheLibraryItIsUnavailable) {
  const auto opened = open_nvml_telemetry({}, "libgpurent-no-such-nvml.so");
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, "nvml_unavailable");
}

}  // namespace
}  // namespace gpurent::agent
