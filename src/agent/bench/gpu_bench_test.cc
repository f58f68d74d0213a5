// The node benchmark's figures: gpurent-gpubench's output read (and refused when malformed), the
// simulated figures from the catalog, the tool itself where it was built, and the agent's
// Benchmarker running it (a stand-in script here) for what the desired state asks.
#include "agent/bench/gpu_bench.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "agent/bench/benchmarker.h"

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

// --- The agent's side: what the desired state asks is measured, once, and kept for the reports.

class BenchmarkerTest : public testing::Test {
 protected:
  BenchmarkerTest()
      : dir_(std::filesystem::temp_directory_path() /
             ("gpurent-benchmarker-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
    for (int i = 0; i < 4; ++i) {
      gpus_.push_back({.uuid = "GPU-" + std::to_string(i), .index = i, .type = "a100-80g"});
    }
  }
  ~BenchmarkerTest() override { std::filesystem::remove_all(dir_); }

  // A stand-in for gpurent-gpubench: a script printing `output` (the shell expands it).
  std::filesystem::path tool(const std::string& output) {
    const auto path = dir_ / "gpurent-gpubench";
    std::ofstream(path) << "#!/bin/sh\nprintf '%s\\n' \"" << output << "\"\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
  }

  // The outcome of request `id`, once the benchmarker's thread has it.
  static model::BenchmarkOutcome wait_for(const Benchmarker& benchmarker, int64_t id) {
    for (int i = 0; i < 500; ++i) {
      if (auto outcome = benchmarker.outcome(id)) return *outcome;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "no outcome for request " << id;
    return {};
  }

  std::filesystem::path dir_;
  std::vector<model::Gpu> gpus_;
};

TEST_F(BenchmarkerTest, SimulatedGpusAnswerAtOnceWithTheirTypesFigures) {
  Benchmarker benchmarker(gpus_, /*simulated=*/true, "");
  EXPECT_FALSE(benchmarker.outcome(7));
  benchmarker.want(model::BenchmarkRequest{.id = 7, .gpus = {"GPU-3", "GPU-1"}});
  const auto outcome = benchmarker.outcome(7);
  ASSERT_TRUE(outcome);
  ASSERT_TRUE(outcome->result);
  EXPECT_TRUE(outcome->result->simulated);
  ASSERT_EQ(outcome->result->gpus.size(), 2u);
  EXPECT_EQ(outcome->result->gpus[0].uuid, "GPU-1");
  EXPECT_EQ(outcome->result->gpus[0].gemm_gflops.at("bf16"), 218'400);  // 312 TFLOPS at 70 %
  EXPECT_FALSE(benchmarker.outcome(8)) << "an outcome answers its own request only";
  // A GPU the node does not have: an error, not a crash or a guess.
  benchmarker.want(model::BenchmarkRequest{.id = 8, .gpus = {"GPU-9"}});
  EXPECT_NE(benchmarker.outcome(8)->error.find("GPU-9"), std::string::npos);
}

TEST_F(BenchmarkerTest, RealGpusRunTheToolOnTheAskedGpusAndAreRenumberedByUuid) {
  // The tool sees only CUDA_VISIBLE_DEVICES (one GPU, its device 0) and names it by UUID.
  const auto path =
      tool(R"({\"gpus\":[{\"index\":0,\"uuid\":\"$CUDA_VISIBLE_DEVICES\",)"
           R"(\"gemm_tflops\":{\"fp32\":19.5,\"bf16\":290.25},)"
           R"(\"memory_gbps\":1800,\"h2d_gbps\":25,\"d2h_gbps\":24.5}],\"peers\":[]})");
  Benchmarker benchmarker(gpus_, /*simulated=*/false, path);
  benchmarker.want(model::BenchmarkRequest{.id = 3, .gpus = {"GPU-2"}});
  const auto outcome = wait_for(benchmarker, 3);
  ASSERT_TRUE(outcome.result) << outcome.error;
  EXPECT_FALSE(outcome.result->simulated);
  ASSERT_EQ(outcome.result->gpus.size(), 1u);
  EXPECT_EQ(outcome.result->gpus[0].index, 2) << "the node's index, not CUDA's";
  EXPECT_EQ(outcome.result->gpus[0].gemm_gflops.at("bf16"), 290'250);
  EXPECT_EQ(outcome.result->gpus[0].d2h_mbps, 24'500);
  // Asked again with the same request: not run again (the outcome stays).
  benchmarker.want(model::BenchmarkRequest{.id = 3, .gpus = {"GPU-2"}});
  EXPECT_TRUE(benchmarker.outcome(3));
}

TEST_F(BenchmarkerTest, AToolThatFailsIsMissingOrMeasuresTheWrongGpuAnswersWithWhy) {
  Benchmarker failing(gpus_, false, tool(R"({\"error\":\"cudaGetDeviceCount: no device\"})"));
  failing.want(model::BenchmarkRequest{.id = 1, .gpus = {"GPU-0"}});
  EXPECT_NE(wait_for(failing, 1).error.find("no device"), std::string::npos);

  Benchmarker wrong(gpus_, false,
                    tool(R"({\"gpus\":[{\"index\":0,\"uuid\":\"GPU-x\",\"gemm_tflops\":{},)"
                         R"(\"memory_gbps\":1,\"h2d_gbps\":1,\"d2h_gbps\":1}]})"));
  wrong.want(model::BenchmarkRequest{.id = 1, .gpus = {"GPU-0"}});
  EXPECT_NE(wait_for(wrong, 1).error.find("not one asked for"), std::string::npos);

  Benchmarker missing(gpus_, false, "");
  missing.want(model::BenchmarkRequest{.id = 1, .gpus = {"GPU-0"}});
  EXPECT_NE(wait_for(missing, 1).error.find("not installed"), std::string::npos);
}

TEST_F(BenchmarkerTest, TheToolIsFoundBesideTheAgentsExecutable) {
  const auto beside = tool("{}");
  std::ofstream(dir_ / "gpurent") << "the agent";
  EXPECT_EQ(Benchmarker::find_tool(dir_ / "gpurent"), std::filesystem::canonical(beside));
}

}  // namespace
}  // namespace gpurent::agent
