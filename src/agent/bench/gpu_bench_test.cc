// The node benchmark's figures: gpurent-gpubench's output read (and refused when malformed), the
// simulated figures from the catalog, and the tool itself where it was built.
#include "agent/bench/gpu_bench.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>

namespace gpurent::agent {
namespace {

constexpr std::string_view kTwoGpus = R"({"simulated":false,
  "gpus":[{"index":1,"uuid":"GPU-b","gemm_tflops":{"fp32":50.5,"bf16":700},"memory_gbps":3000,
           "h2d_gbps":50,"d2h_gbps":49},
          {"index":0,"uuid":"GPU-a","gemm_tflops":{"fp32":51,"tf32":350,"fp16":690,"bf16":701},
           "memory_gbps":3010,"h2d_gbps":51,"d2h_gbps":50}],
  "peers":[{"from":0,"to":1,"gbps":360},{"from":1,"to":0,"gbps":358}]})";

TEST(GpuBench, ReadsTheToolsOutputAndWritesItBack) {
  const auto parsed = parse_gpubench(kTwoGpus);
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_EQ(parsed->gpus.size(), 2u);
  EXPECT_FALSE(parsed->simulated);
  const GpuBenchmark& first = parsed->gpus[0];  // by index
  EXPECT_EQ(first.index, 0);
  EXPECT_EQ(first.uuid, "GPU-a");
  EXPECT_EQ(first.gemm_gflops.at("tf32"), 350'000);
  EXPECT_EQ(first.memory_mbps, 3'010'000);
  EXPECT_EQ(parsed->gpus[1].gemm_gflops.at("fp32"), 50'500);  // TFLOPS to GFLOPS, exactly
  EXPECT_FALSE(parsed->gpus[1].gemm_gflops.contains("tf32"));
  ASSERT_EQ(parsed->peers.size(), 2u);
  EXPECT_EQ(parsed->peers[1].mbps, 358'000);
  const auto again = parse_gpubench(to_json(*parsed).dump());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(to_json(*again), to_json(*parsed));
}

TEST(GpuBench, RefusesMalformedOutputSayingWhat) {
  const std::array<std::pair<std::string_view, std::string_view>, 8> cases = {{
      {"not json", "not a JSON object"},
      {R"({"gpus":{}})", "'gpus' is not an array"},
      {R"({"gpus":[{"gemm_tflops":{}}]})", "integer 'index'"},
      {R"({"gpus":[{"index":0,"gemm_tflops":{"fp4":1},"memory_gbps":1,"h2d_gbps":1,"d2h_gbps":1}]})",
       "unknown precision 'fp4'"},
      {R"({"gpus":[{"index":0,"gemm_tflops":{},"memory_gbps":-1,"h2d_gbps":1,"d2h_gbps":1}]})",
       "'memory_gbps' is negative or not finite"},
      {R"({"gpus":[{"index":0,"gemm_tflops":{},"memory_gbps":1,"d2h_gbps":1}]})",
       "'h2d_gbps' is missing"},
      {R"({"gpus":[{"index":0,"gemm_tflops":{},"memory_gbps":1,"h2d_gbps":1,"d2h_gbps":1}],
           "peers":[{"from":0,"to":3,"gbps":1}]})",
       "names a GPU not measured"},
      {R"({"gpus":[{"index":0,"gemm_tflops":{},"memory_gbps":1,"h2d_gbps":1,"d2h_gbps":1},
                   {"index":0,"gemm_tflops":{},"memory_gbps":1,"h2d_gbps":1,"d2h_gbps":1}]})",
       "GPU 0 appears twice"},
  }};
  for (const auto& [output, says] : cases) {
    const auto parsed = parse_gpubench(output);
    ASSERT_FALSE(parsed) << output;
    EXPECT_EQ(parsed.error().code, "invalid_benchmark") << output;
    EXPECT_NE(parsed.error().message.find(says), std::string::npos) << parsed.error().message;
  }
  const auto failed = parse_gpubench(R"({"error":"cudaGetDeviceCount: no CUDA-capable device"})");
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, "benchmark_failed");
  EXPECT_NE(failed.error().message.find("no CUDA-capable device"), std::string::npos);
}

TEST(GpuBench, SimulatedGpusMeasureTheirTypesPeaksAtTypicalEfficiency) {
  std::vector<model::Gpu> gpus;
  for (int i = 0; i < 4; ++i) {
    gpus.push_back({.uuid = "GPU-h" + std::to_string(i),
                    .index = i,
                    .type = "h100-80g",
                    .nvlink_domain = i / 2});
  }
  gpus.push_back({.uuid = "GPU-x", .index = 4, .type = "mystery-1g"});
  const NodeBenchmark bench = simulated_benchmark(gpus);
  EXPECT_TRUE(bench.simulated);
  ASSERT_EQ(bench.gpus.size(), 5u);
  const GpuBenchmark& h100 = bench.gpus[0];
  EXPECT_EQ(h100.gemm_gflops.at("bf16"), 692'650);  // 989.5 TFLOPS at 70 %
  EXPECT_EQ(h100.gemm_gflops.at("fp8"), 1'385'300);
  EXPECT_EQ(h100.memory_mbps, 3'015'000);          // 3,350 GB/s at 90 %
  EXPECT_EQ(h100.h2d_mbps, 51'200);                // 64 GB/s at 80 %
  EXPECT_TRUE(bench.gpus[4].gemm_gflops.empty());  // a type the catalog lacks: no figures
  // NVLink within each domain of two, both ways: 0<->1 and 2<->3.
  ASSERT_EQ(bench.peers.size(), 4u);
  EXPECT_EQ(bench.peers[0].from, 0);
  EXPECT_EQ(bench.peers[0].to, 1);
  EXPECT_EQ(bench.peers[3].from, 3);
  EXPECT_EQ(bench.peers[3].to, 2);
  EXPECT_EQ(bench.peers[0].mbps, 360'000);
  // An A100 has no FP8 unit: no figure, rather than a zero.
  const auto a100 = simulated_benchmark({{.uuid = "GPU-a", .index = 0, .type = "a100-80g"}});
  EXPECT_FALSE(a100.gpus[0].gemm_gflops.contains("fp8"));
  EXPECT_TRUE(parse_gpubench(to_json(bench).dump()));
}

TEST(GpuBench, TheToolMeasuresTheGpusOrSaysWhyNot) {
  const std::string tool = GPURENT_GPUBENCH;
  if (tool.empty()) GTEST_SKIP() << "gpurent-gpubench was not built (no CUDA toolkit)";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((tool + " --quick").c_str(), "r"), pclose);
  ASSERT_TRUE(pipe);
  std::string output;
  std::array<char, 4096> chunk{};
  while (const size_t n = fread(chunk.data(), 1, chunk.size(), pipe.get())) {
    output.append(chunk.data(), n);
  }
  const auto parsed = parse_gpubench(output);
  if (parsed) {
    // A machine with GPUs: every one measured.
    ASSERT_FALSE(parsed->gpus.empty()) << output;
    for (const auto& gpu : parsed->gpus) {
      EXPECT_GT(gpu.gemm_gflops.at("fp32"), 0) << output;
      EXPECT_GT(gpu.memory_mbps, 0) << output;
    }
  } else {
    // None here: the tool says so in its own words, as JSON.
    EXPECT_EQ(parsed.error().code, "benchmark_failed") << output;
  }
}

}  // namespace
}  // namespace gpurent::agent
