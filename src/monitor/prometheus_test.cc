#include "monitor/prometheus.h"

#include <gtest/gtest.h>

#include <limits>

namespace gpurent::monitor {
namespace {

TEST(Prometheus, GaugesCountersAndEscaping) {
  Exposition exposition;
  ASSERT_TRUE(exposition.gauge("gpurent_nodes", "Nodes by state.", {{"state", "ready"}}, 3));
  ASSERT_TRUE(
      exposition.counter("gpurent_api_requests_total", "Requests.\nAll of them \\ o/", {}, 1e6));
  ASSERT_TRUE(exposition.gauge("gpurent_nodes", "ignored: the first help stays",
                               {{"state", "down"}, {"reason", "a \"quoted\"\\path\nline"}}, 0.25));
  ASSERT_TRUE(exposition.gauge("gpurent_weird", "Special values.", {{"v", "nan"}},
                               std::numeric_limits<double>::quiet_NaN()));
  ASSERT_TRUE(exposition.gauge("gpurent_weird", "", {{"v", "inf"}},
                               std::numeric_limits<double>::infinity()));
  ASSERT_TRUE(exposition.gauge("gpurent_weird", "", {{"v", "-inf"}},
                               -std::numeric_limits<double>::infinity()));
  ASSERT_TRUE(exposition.gauge("gpurent_weird", "", {{"v", "small"}}, -1.5e-7));
  EXPECT_EQ(exposition.render(),
            "# HELP gpurent_nodes Nodes by state.\n"
            "# TYPE gpurent_nodes gauge\n"
            "gpurent_nodes{state=\"ready\"} 3\n"
            "gpurent_nodes{state=\"down\",reason=\"a \\\"quoted\\\"\\\\path\\nline\"} 0.25\n"
            "# HELP gpurent_api_requests_total Requests.\\nAll of them \\\\ o/\n"
            "# TYPE gpurent_api_requests_total counter\n"
            "gpurent_api_requests_total 1000000\n"
            "# HELP gpurent_weird Special values.\n"
            "# TYPE gpurent_weird gauge\n"
            "gpurent_weird{v=\"nan\"} NaN\n"
            "gpurent_weird{v=\"inf\"} +Inf\n"
            "gpurent_weird{v=\"-inf\"} -Inf\n"
            "gpurent_weird{v=\"small\"} -1.5e-07\n");
}

TEST(Prometheus, RefusesBadNamesAndTypeConflicts) {
  Exposition exposition;
  EXPECT_EQ(exposition.gauge("1abc", "", {}, 1).error().code, "invalid_metric_name");
  EXPECT_EQ(exposition.gauge("a-b", "", {}, 1).error().code, "invalid_metric_name");
  EXPECT_TRUE(exposition.gauge("ns:a_b", "", {}, 1));
  EXPECT_EQ(exposition.gauge("x", "", {{"a:b", "1"}}, 1).error().code, "invalid_label_name");
  EXPECT_EQ(exposition.gauge("x", "", {{"__name", "1"}}, 1).error().code, "invalid_label_name");
  EXPECT_EQ(exposition.histogram("h", "", {{"le", "1"}}, {}).error().code, "invalid_label_name");
  EXPECT_EQ(exposition.counter("ns:a_b", "", {}, 1).error().code, "metric_type_conflict");
  EXPECT_EQ(exposition.render(), "# HELP ns:a_b \n# TYPE ns:a_b gauge\nns:a_b 1\n");
}

TEST(Prometheus, HistogramBucketsAreCumulative) {
  LatencyHistogram latency;
  using std::chrono::microseconds;
  latency.observe(microseconds(300));         // <= 0.0005
  latency.observe(microseconds(500));         // <= 0.0005 (bounds are inclusive)
  latency.observe(microseconds(2'000));       // <= 0.0025
  latency.observe(microseconds(700'000));     // <= 1
  latency.observe(microseconds(60'000'000));  // +Inf
  const HistogramSnapshot snapshot = latency.snapshot();
  EXPECT_EQ(snapshot.count, 5u);
  EXPECT_DOUBLE_EQ(snapshot.sum, 60.7028);

  HistogramSnapshot small{{0.1, 1}, {1, 2, 3}, 4.5, 6};
  Exposition exposition;
  ASSERT_TRUE(exposition.histogram("gpurent_api_latency_seconds", "API latency.",
                                   {{"route", "/v1/instances"}}, small));
  EXPECT_EQ(exposition.render(),
            "# HELP gpurent_api_latency_seconds API latency.\n"
            "# TYPE gpurent_api_latency_seconds histogram\n"
            "gpurent_api_latency_seconds_bucket{route=\"/v1/instances\",le=\"0.1\"} 1\n"
            "gpurent_api_latency_seconds_bucket{route=\"/v1/instances\",le=\"1\"} 3\n"
            "gpurent_api_latency_seconds_bucket{route=\"/v1/instances\",le=\"+Inf\"} 6\n"
            "gpurent_api_latency_seconds_sum{route=\"/v1/instances\"} 4.5\n"
            "gpurent_api_latency_seconds_count{route=\"/v1/instances\"} 6\n");

  Exposition full;
  ASSERT_TRUE(full.histogram("lat", "", {}, snapshot));
  const std::string text = full.render();
  EXPECT_NE(text.find("lat_bucket{le=\"0.0005\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("lat_bucket{le=\"0.001\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("lat_bucket{le=\"0.0025\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("lat_bucket{le=\"10\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("lat_bucket{le=\"+Inf\"} 5\nlat_sum 60.7028\nlat_count 5\n"),
            std::string::npos);
}

TEST(Prometheus, GpuFamiliesUseDcgmNamesAndLabels) {
  SeriesStore store;
  constexpr int64_t kNow = 1'764'547'200'000;
  const MetricSample a[] = {{Metric::kGpuUtil, kNow - 1000, 97},
                            {Metric::kGpuTemp, kNow - 1000, 71},
                            {Metric::kEccDbe, kNow - 1000, 0}};
  const MetricSample b[] = {{Metric::kGpuUtil, kNow - 2000, 0},
                            {Metric::kGpuTemp, kNow - 600'000, 40}};  // stale
  store.ingest("GPU-a", "node-1", a);
  store.ingest("GPU-b", "node-1", b);
  const GpuReading readings[] = {
      latest_reading(store, {"GPU-a", 0, "gpu-host-1", "NVIDIA H100 80GB HBM3", "i-abc", "t-1"},
                     kNow, 60'000),
      latest_reading(store, {"GPU-b", 1, "gpu-host-1", "NVIDIA H100 80GB HBM3", "", ""}, kNow,
                     60'000)};
  ASSERT_EQ(readings[1].values.size(), 1u);
  Exposition exposition;
  ASSERT_TRUE(add_gpu_families(exposition, readings));
  EXPECT_EQ(exposition.render(),
            "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
            "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
            "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100 80GB "
            "HBM3\",Hostname=\"gpu-host-1\",instance_id=\"i-abc\",tenant=\"t-1\"} 97\n"
            "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-b\",modelName=\"NVIDIA H100 80GB "
            "HBM3\",Hostname=\"gpu-host-1\"} 0\n"
            "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
            "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
            "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100 80GB "
            "HBM3\",Hostname=\"gpu-host-1\",instance_id=\"i-abc\",tenant=\"t-1\"} 71\n"
            "# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL Total number of double-bit volatile ECC errors.\n"
            "# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter\n"
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100 80GB "
            "HBM3\",Hostname=\"gpu-host-1\",instance_id=\"i-abc\",tenant=\"t-1\"} 0\n");
}

}  // namespace
}  // namespace gpurent::monitor
