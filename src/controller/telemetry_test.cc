#include <gtest/gtest.h>

#include "controller/controller_test_fixture.h"

namespace gpurent::controller {
namespace {

using TelemetryTest = ControllerTest;

model::NodeReport with_telemetry(std::vector<model::GpuSample> samples,
                                 std::vector<model::XidEvent> xids = {}) {
  model::NodeReport report;
  report.telemetry.samples = std::move(samples);
  report.telemetry.xids = std::move(xids);
  return report;
}

TEST_F(TelemetryTest, KeepsTheLatestSamplePerGpuOfTheReportingNode) {
  EXPECT_EQ(ctl_.fleet().nodes().gpu_telemetry("GPU-a0"), nullptr);
  ASSERT_TRUE(ctl_.apply_report(
      node_, with_telemetry({{.uuid = "GPU-a0", .time_ms = 2'000, .gpu_util_pct = 97},
                             {.uuid = "GPU-a0", .time_ms = 1'000, .gpu_util_pct = 5},
                             {.uuid = "GPU-other", .time_ms = 3'000, .gpu_util_pct = 50}},
                            {{"GPU-a1", 1'500, 79}, {"GPU-other", 1'500, 79}})));
  const GpuTelemetry* a0 = ctl_.fleet().nodes().gpu_telemetry("GPU-a0");
  ASSERT_NE(a0, nullptr);
  EXPECT_EQ(a0->latest->time_ms, 2'000);  // the newest, whatever the order
  EXPECT_EQ(a0->latest->gpu_util_pct, 97);
  EXPECT_FALSE(a0->latest->power_w.has_value());
  EXPECT_EQ(ctl_.fleet().nodes().gpu_telemetry("GPU-other"), nullptr);  // not this node's GPU
  const GpuTelemetry* a1 = ctl_.fleet().nodes().gpu_telemetry("GPU-a1");
  ASSERT_NE(a1, nullptr);
  EXPECT_FALSE(a1->latest.has_value());
  EXPECT_EQ(a1->last_xid->code, 79);
  EXPECT_EQ(a1->xid_count, 1);
  EXPECT_EQ(ctl_.fleet().nodes().gpu_telemetry("GPU-a2"),
            nullptr);  // the node's, but it never reported

  // Another node's GPUs are kept apart.
  const std::string node_b = add_node("node-b", "h100-80g", 2, "GPU-b");
  ASSERT_TRUE(ctl_.apply_report(
      node_b, with_telemetry({{.uuid = "GPU-b1", .time_ms = 2'500, .gpu_util_pct = 42},
                              {.uuid = "GPU-a0", .time_ms = 9'000, .gpu_util_pct = 3}})));
  EXPECT_EQ(ctl_.fleet().nodes().gpu_telemetry("GPU-b1")->latest->gpu_util_pct, 42);
  EXPECT_EQ(ctl_.fleet().nodes().gpu_telemetry("GPU-b0"), nullptr);
  EXPECT_EQ(ctl_.fleet().nodes().gpu_telemetry("GPU-a0")->latest->time_ms,
            2'000);  // not node-b's to report

  // A replayed backlog does not hide the newer sample.
  ASSERT_TRUE(ctl_.apply_report(
      node_, with_telemetry({{.uuid = "GPU-a0", .time_ms = 1'500, .gpu_util_pct = 1}})));
  EXPECT_EQ(ctl_.fleet().nodes().gpu_telemetry("GPU-a0")->latest->gpu_util_pct, 97);
}

}  // namespace
}  // namespace gpurent::controller
