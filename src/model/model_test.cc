#include <gtest/gtest.h>

#include "model/agent_protocol.h"
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
