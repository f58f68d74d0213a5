// `gpurent nodes show`: each GPU's current telemetry.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli/views.h"

namespace gpurent::cli {
namespace {

TEST(CliTelemetryView, NodeShowsEachGpusCurrentReadings) {
  const Timestamp now = *parse_rfc3339("2026-11-30T15:30:00.000Z");
  const Json node = Json::parse(R"(
    {"id": "n-1", "name": "gpu-1", "state": "ready", "free_gpus": 1, "gpus": [
      {"uuid": "GPU-a", "index": 0, "type": "h100-80g", "name": "NVIDIA H100", "memory_mb": 81920,
       "instance_id": "i-1", "telemetry": {"time": "2026-11-30T15:29:59.000Z", "gpu_util_pct": 97,
       "temperature_c": 71, "power_w": 612.5, "fb_used_mib": 61234, "last_xid": null,
       "xid_count": 0}},
      {"uuid": "GPU-b", "index": 1, "type": "h100-80g", "name": "NVIDIA H100", "memory_mb": 81920,
       "instance_id": null, "telemetry": {"temperature_c": 35, "last_xid": {"code": 79},
       "xid_count": 1}},
      {"uuid": "GPU-c", "index": 2, "type": "h100-80g", "name": "NVIDIA H100", "memory_mb": 81920,
       "instance_id": null, "telemetry": null}]})");
  const std::string text = node_view(node, now);
  const auto row = [&](std::string_view uuid) {
    const size_t at = text.find(uuid);
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_NE(text.find("UTIL"), std::string::npos) << text;
  EXPECT_NE(row("GPU-a").find("97%"), std::string::npos) << text;
  EXPECT_NE(row("GPU-a").find("71 C"), std::string::npos) << text;
  EXPECT_NE(row("GPU-a").find("612.5 W"), std::string::npos) << text;
  EXPECT_NE(row("GPU-a").find("61234 MiB"), std::string::npos) << text;
  EXPECT_NE(row("GPU-b").find("79"), std::string::npos) << text;  // its last XID
  EXPECT_EQ(row("GPU-c").find('%'), std::string::npos) << text;
  EXPECT_NE(text.find("Clock skew"), std::string::npos) << text;
}

TEST(CliTelemetryView, NodeShowsItsAgentsClockSkew) {
  const Timestamp now = *parse_rfc3339("2026-11-30T15:30:00.000Z");
  const auto skew_line = [&](std::string_view skew) {
    const std::string text = node_view(
        Json::parse(fmt::format(R"({{"id": "n-1", "gpus": [], "clock_skew_ms": {}}})", skew)), now);
    const size_t at = text.find("Clock skew");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_NE(skew_line("-2500").find("-2.500 s"), std::string::npos);
  EXPECT_NE(skew_line("12").find("+0.012 s"), std::string::npos);
  EXPECT_NE(skew_line("null").find("-"), std::string::npos);
}

}  // namespace
}  // namespace gpurent::cli
