#include <gtest/gtest.h>

#include <fmt/format.h>

#include "model/agent_protocol.h"
#include "model/benchmark.h"
#include "model/codec.h"
#include "model/gpu_catalog.h"

namespace gpurent::model {
namespace {

TEST(GpuCatalog, MatchesNvmlNamesToSlugs) {
  EXPECT_EQ(gpu_type_slug_for("NVIDIA H100 80GB HBM3", 81559), "h100-80g");
  EXPECT_EQ(gpu_type_slug_for("NVIDIA H200", 143771), "h200-141g");
  EXPECT_EQ(gpu_type_slug_for("NVIDIA A100-SXM4-40GB", 40960), "a100-40g");
  EXPECT_EQ(gpu_type_slug_for("NVIDIA A100-SXM4-80GB", 81920), "a100-80g");
  EXPECT_EQ(gpu_type_slug_for("NVIDIA GeForce RTX 4090", 24564), "rtx4090-24g");
  EXPECT_EQ(gpu_type_slug_for("NVIDIA H100 NVL", 95830), "h100-94g");
  EXPECT_EQ(gpu_type_slug_for("Tesla K80", 11441), "teslak80-12g");
}

TEST(GpuCatalog, AnUnknownTypeIsAnsweredWithTheClosestOnes) {
  EXPECT_EQ(unknown_gpu_type_message("h100"),
            "unknown GPU type 'h100'; did you mean h100-80g? (`gpurent offers` lists the types, as "
            "GET /v1/gpu-types does)");
  EXPECT_NE(unknown_gpu_type_message("h100-80").find("did you mean h100-80g?"), std::string::npos);
  EXPECT_NE(unknown_gpu_type_message("a100-80gb").find("a100-80g"), std::string::npos);
  EXPECT_EQ(unknown_gpu_type_message("quantum").find("did you mean"), std::string::npos);
}

TEST(GpuCatalog, ParsesSimulationSpecs) {
  std::string error;
  const auto groups = parse_sim_gpu_spec("4xa100-80g,2xrtx4090-24g,h100-80g", &error);
  ASSERT_TRUE(groups) << error;
  ASSERT_EQ(groups->size(), 3u);
  EXPECT_EQ((*groups)[0].slug, "a100-80g");
  EXPECT_EQ((*groups)[0].count, 4);
  EXPECT_EQ((*groups)[2].count, 1);
  EXPECT_FALSE(parse_sim_gpu_spec("8xh100", &error));
  EXPECT_NE(error.find("8xh100"), std::string::npos);
  EXPECT_FALSE(parse_sim_gpu_spec("0xh100-80g", &error));
  EXPECT_FALSE(parse_sim_gpu_spec("", &error));
}

TEST(Resnet50Report, ReadsEachPrecisionsLineFromTheLog) {
  const std::string log =
      "torch warnings\n"
      "GPURENT_RESNET50 {\"precision\": \"fp32\", \"images_per_s\": 812.25, \"batch\": 64, "
      "\"steps\": 30, \"image_size\": 224, \"device\": \"NVIDIA H200\", \"gpu\": \"GPU-1\"}\n"
      "more output\n"
      "GPURENT_RESNET50 {\"precision\": \"amp\", \"images_per_s\": 2950.5, \"batch\": 64, "
      "\"image_size\": 224, \"device\": \"NVIDIA H200\", \"gpu\": \"GPU-1\"}";
  const auto report = resnet50_report(log);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->gpu, "GPU-1");
  EXPECT_EQ(report->run.model, "resnet50");
  EXPECT_EQ(report->run.batch, 64);
  EXPECT_EQ(report->run.image_size, 224);
  EXPECT_EQ(report->run.device, "NVIDIA H200");
  EXPECT_EQ(report->run.images_per_hour,
            (std::map<std::string, int64_t>{{"amp", 10'621'800}, {"fp32", 2'924'100}}));
}

TEST(Resnet50Report, RefusesAnUnfinishedInconsistentOrImplausibleLog) {
  const auto line = [](std::string_view precision, std::string_view rest) {
    return fmt::format("GPURENT_RESNET50 {{\"precision\": \"{}\", {}}}\n", precision, rest);
  };
  constexpr std::string_view ok =
      R"("images_per_s": 10, "batch": 8, "image_size": 224, "device": "cpu", "gpu": "GPU-1")";
  for (const std::string& bad : {
           line("fp32", ok),  // no amp line: it stopped half way
           std::string("nothing at all\n"),
           line("fp32", ok) + line("amp", R"("images_per_s": 10, "batch": 16, "image_size": 224,
               "device": "cpu", "gpu": "GPU-1")"),
           line("fp32", ok) + line("amp", R"("images_per_s": 10, "batch": 8, "image_size": 224,
               "device": "cpu", "gpu": "GPU-2")"),
           line("fp32", ok) + line("amp", R"("images_per_s": -1, "batch": 8, "image_size": 224,
               "device": "cpu", "gpu": "GPU-1")"),
           line("fp32", ok) + line("amp", R"("images_per_s": 1e12, "batch": 8, "image_size": 224,
               "device": "cpu", "gpu": "GPU-1")"),
           line("fp32", ok) + line("fp64", ok),
           line("fp32", ok) + "GPURENT_RESNET50 {not json\n",
           line("fp32", ok) + line("amp", R"("images_per_s": 10, "batch": 8, "image_size": 224,
               "device": "cpu", "gpu": "GPU-1,GPU-2")"),
       }) {
    const auto report = resnet50_report(bad);
    ASSERT_FALSE(report) << bad;
    EXPECT_EQ(report.error().code, "invalid_benchmark_log") << bad;
  }
}

TEST(Codec, InstanceRoundTripsThroughJson) {
  Instance instance;
  instance.id = "i-1";
  instance.tenant_id = "t-1";
  instance.spec.name = "train";
  instance.spec.gpu_types = {"h100-80g", "a100-80g"};
  instance.spec.gpu_count = 2;
  instance.spec.cpu = 16;
  instance.spec.memory_gb = 64;
  instance.spec.node_selector = {{"region", "eu"}};
  instance.spec.command = {"python3", "-c", "print(1)"};
  instance.spec.env = {{"A", "b"}};
  instance.spec.pricing = PricingModel::kSpot;
  instance.spec.priority = -3;
  instance.spec.queue = false;
  instance.spec.max_runtime_s = 3600;
  instance.gpu_type = "h100-80g";
  instance.preempt_requested = true;
  instance.state = InstanceState::kRunning;
  instance.node_id = "n-1";
  instance.gpus = {"GPU-1", "GPU-2"};
  instance.run = 3;
  instance.created_at = from_unix_ms(1000);
  instance.started_at = from_unix_ms(2000);
  instance.exit_code = 137;
  const Instance copy = Json(instance).get<Instance>();
  EXPECT_EQ(Json(copy), Json(instance));
  EXPECT_EQ(copy.started_at, instance.started_at);
  EXPECT_FALSE(copy.ended_at);
  EXPECT_EQ(copy.exit_code, 137);
}

}  // namespace
}  // namespace gpurent::model
