#include "model/telemetry.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "model/agent_protocol.h"
#include "model/codec.h"
#include "model/node_report_json.h"

namespace gpurent::model {
namespace {

// What an H100 under load reports: every field present.
GpuSample full_sample(std::string uuid, int64_t time_ms, int64_t util) {
  return {.uuid = std::move(uuid),
          .time_ms = time_ms,
          .gpu_util_pct = util,
          .mem_util_pct = util * 6 / 10,
          .fb_used_mib = 61'234,
          .fb_free_mib = 20'325,
          .temperature_c = 71,
          .power_w = 612.5,
          .sm_clock_mhz = 1'980,
          .mem_clock_mhz = 2'619,
          .pcie_tx_kbps = 184'000,
          .pcie_rx_kbps = 921'000,
          .throttle_reasons = kThrottleSwPowerCap,
          .ecc_sbe_total = 0,
          .ecc_dbe_total = 0,
          .nvlink_up = 18,
          .nvlink_total = 18};
}

TelemetryBatch round_trip(const TelemetryBatch& batch) {
  const Json json = batch;
  return Json::parse(json.dump()).get<TelemetryBatch>();
}

TEST(TelemetryCodec, RoundTripKeepsAbsentFieldsAbsent) {
  TelemetryBatch batch;
  batch.samples.push_back(full_sample("GPU-a", 1'700'000'000'000, 97));
  // A PCIe card without NVLink or ECC, and a sample whose driver missed the power reading.
  GpuSample pcie{
      .uuid = "GPU-b", .time_ms = 1'700'000'000'005, .gpu_util_pct = 0, .temperature_c = 35};
  batch.samples.push_back(pcie);
  batch.samples.push_back(full_sample("GPU-a", 1'700'000'001'000, 98));
  pcie.time_ms += 1'000;
  pcie.power_w = 22.5;
  batch.samples.push_back(pcie);
  batch.xids.push_back({"GPU-b", 1'700'000'001'500, 79});
  batch.dropped = 3;

  const TelemetryBatch back = round_trip(batch);
  // Grouped by GPU in order of first appearance: a's two samples, then b's.
  ASSERT_EQ(back.samples.size(), 4u);
  EXPECT_EQ(back.samples[0], batch.samples[0]);
  EXPECT_EQ(back.samples[1], batch.samples[2]);
  EXPECT_EQ(back.samples[2], batch.samples[1]);
  EXPECT_EQ(back.samples[3], batch.samples[3]);
  EXPECT_FALSE(back.samples[2].power_w.has_value());  // absent, not zero
  EXPECT_FALSE(back.samples[2].nvlink_up.has_value());
  EXPECT_EQ(back.xids, batch.xids);
  EXPECT_EQ(back.dropped, 3);

  EXPECT_TRUE(Json(batch).is_string());  // base64 of the frame
}

TEST(TelemetryCodec, FrameRoundTripsEdgeValues) {
  TelemetryBatch batch;
  GpuSample extreme{.uuid = "GPU-x",
                    .time_ms = INT64_MAX,
                    .gpu_util_pct = INT64_MIN,
                    .fb_used_mib = INT64_MAX,
                    .power_w = -12.5,
                    .ecc_dbe_total = 0};
  batch.samples.push_back(extreme);
  extreme.time_ms = -1;  // a backwards clock: deltas may be negative
  extreme.gpu_util_pct = INT64_MAX;
  extreme.fb_used_mib = INT64_MIN;
  extreme.power_w.reset();
  batch.samples.push_back(extreme);
  for (int i = 0; i < 9; ++i) {  // more than 8 samples: a presence bitmap of two bytes
    batch.samples.push_back({.uuid = "GPU-x", .time_ms = i, .temperature_c = i % 2 ? 50 : 0});
  }
  batch.xids.push_back({"GPU-y", -5, INT64_MIN});
  const auto back = decode_telemetry_frame(encode_telemetry_frame(batch));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, batch);

  // Power travels in tenths of a watt; non-finite power is absent.
  TelemetryBatch power;
  power.samples.push_back({.uuid = "g", .power_w = 612.3});
  power.samples.push_back({.uuid = "g", .power_w = std::nan("")});
  const auto power_back = decode_telemetry_frame(encode_telemetry_frame(power));
  ASSERT_TRUE(power_back);
  EXPECT_EQ(power_back->samples[0].power_w, 612.3);
  EXPECT_FALSE(power_back->samples[1].power_w);
}

TEST(TelemetryCodec, NodeReportCarriesTelemetryOnlyWhenThereIsSome) {
  NodeReport report;
  EXPECT_FALSE(Json::parse(node_report_json(report)).contains("telemetry"));
  report.telemetry.samples.push_back(full_sample("GPU-a", 5, 1));
  const auto back = read_node_report(node_report_json(report));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->telemetry, report.telemetry);
}

TEST(TelemetryCodec, MalformedAndOversizedBatchesAreRefused) {
  const auto decode = [](const Json& json) { return decode_message<TelemetryBatch>(json); };
  // The JSON column form of older agents, another frame version, bad base64.
  const auto old = decode(Json::parse(R"({"gpus": [{"uuid": "g", "t": [1]}], "xids": []})"));
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().code, "invalid_message");
  EXPECT_NE(old.error().message.find("upgrade the agent"), std::string::npos);
  EXPECT_FALSE(decode("AQAAAA=="));  // version 1
  EXPECT_FALSE(decode("not base64!"));

  TelemetryBatch one;
  one.samples.push_back(full_sample("GPU-a", 5, 1));
  one.xids.push_back({"GPU-a", 6, 79});
  const std::string frame = encode_telemetry_frame(one);
  ASSERT_TRUE(decode_telemetry_frame(frame));
  // Every truncation is refused, and so are trailing bytes.
  for (size_t n = 0; n < frame.size(); ++n) {
    EXPECT_FALSE(decode_telemetry_frame(frame.substr(0, n))) << n;
  }
  EXPECT_FALSE(decode_telemetry_frame(frame + "x"));
  const std::string too_long_uuid(kMaxTelemetryUuidBytes + 1, 'u');
  one.samples[0].uuid = too_long_uuid;
  EXPECT_FALSE(decode_telemetry_frame(encode_telemetry_frame(one)));

  TelemetryBatch big;
  for (size_t i = 0; i <= kMaxTelemetrySamples; ++i) {
    big.samples.push_back({.uuid = "g", .time_ms = static_cast<int64_t>(i)});
  }
  auto decoded = decode_message<TelemetryBatch>(Json(big));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->samples.size(), kMaxTelemetrySamples + 1);  // decoding stopped there
  const auto checked = check_telemetry_bounds(*decoded);
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error().code, "telemetry_too_large");
  big.samples.pop_back();
  EXPECT_TRUE(check_telemetry_bounds(big));
}

// One report of an 8-GPU node after 3 s (the simulated fleet's report interval) of 1 Hz samples
// with every field present, as the JSON string in the report: 51 bytes per sample when measured
// (the JSON column form this frame replaced: 153). The UUID and each column's first value are paid
// once per GPU and batch, so longer batches are cheaper per sample. The bound guards against
// growth.
TEST(TelemetryCodec, EncodingIsCompact) {
  TelemetryBatch batch;
  for (int tick = 0; tick < 3; ++tick) {
    for (int gpu = 0; gpu < 8; ++gpu) {
      batch.samples.push_back(
          full_sample(fmt::format("GPU-{:08x}-1234-5678-9abc-def012345678", gpu),
                      1'764'550'000'000 + tick * 1'000 + gpu, 90 + tick));
    }
  }
  const size_t bytes = Json(batch).dump().size();
  const double per_sample = static_cast<double>(bytes) / static_cast<double>(batch.samples.size());
  std::printf("telemetry wire bytes: %zu for %zu samples = %.1f bytes/sample\n", bytes,
              batch.samples.size(), per_sample);
  EXPECT_LT(per_sample, 60.0);  // 51 when measured
}

}  // namespace
}  // namespace gpurent::model
