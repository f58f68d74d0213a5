#include "model/codec.h"

#include <gtest/gtest.h>

namespace gpurent::model {
namespace {

Instance full_instance() {
  Instance v;
  v.id = "i-1";
  v.tenant_id = "t-1";
  v.spec.name = "sweep-3-0";
  v.spec.gpu_types = {"h100-80g", "a100-80g"};
  v.spec.gpu_count = 2;
  v.spec.gpu_milli = 500;
  v.spec.cpu = 4;
  v.spec.memory_gb = 32;
  v.spec.node_selector = {{"zone", "b"}};
  v.spec.command = {"sh", "-c", "echo \"hi\" \\ there\n\tbye \x01 ü"};
  v.spec.env = {{"B", "2"}, {"A", "quote\"d"}, {"Z_", ""}, {"_", "x"}};
  v.spec.pricing = PricingModel::kSpot;
  v.spec.priority = -3;
  v.spec.max_runtime_s = 3600;
  v.spec.reservation_id = "r-1";
  v.spec.image = "nvcr.io/nvidia/pytorch:24.10-py3";
  v.spec.services = {"jupyter"};
  v.state = InstanceState::kRunning;
  v.node_id = "n-1";
  v.gpus = {"GPU-a", "GPU-b"};
  v.gpu_type = "h100-80g";
  v.gpu_milli = 500;
  v.queued_at = from_unix_ms(1'790'000'000'123);
  v.queue_sequence = 42;
  v.run = 3;
  v.created_at = from_unix_ms(1'790'000'000'000);
  v.started_at = from_unix_ms(1'790'000'001'000);
  v.exit_code = -1;
  v.reason = "retrying after attempt 1 of 2";
  v.preempt_requested = true;
  v.placed_generation = 1'048'600;
  v.job_id = "j-1";
  v.job_task = 3;
  v.job_rank = 1;
  v.platform_env = {{"RANK", "8"}, {"MASTER_ADDR", "node-a"}, {"GPURENT_ARRAY_INDEX", "3"}};
  v.revision = 9;
  return v;
}

TEST(CodecTest, TheDirectInstanceWriterWritesWhatNlohmannDumps) {
  const Instance full = full_instance();
  EXPECT_EQ(instance_json(full), Json(full).dump());
  const Instance empty;  // nulls, empty lists and maps
  EXPECT_EQ(instance_json(empty), Json(empty).dump());
  // And it reads back as the same instance.
  const Instance back = Json::parse(instance_json(full)).get<Instance>();
  EXPECT_EQ(Json(back).dump(), Json(full).dump());
}

TEST(CodecTest, TheDirectDesiredStateWriterWritesWhatNlohmannDumps) {
  DesiredState desired{"n-1", 1'048'577, {}};
  EXPECT_EQ(desired_state_json(desired), Json(desired).dump());
  desired.workloads.push_back({.instance_id = "i-1",
                               .run = 2,
                               .should_run = true,
                               .image = "pytorch/pytorch:2.5.1",
                               .command = {"python", "-c", "print(\"a\\tb\")"},
                               .env = {{"RANK", "8"}, {"A", "x\ny"}},
                               .gpus = {"GPU-a", "GPU-b"},
                               .cpu = 4,
                               .memory_gb = 64,
                               .services = {"jupyter", "tensorboard"}});
  desired.workloads.push_back({.instance_id = "i-2", .run = 1, .should_run = false});
  EXPECT_EQ(desired_state_json(desired), Json(desired).dump());
}

}  // namespace
}  // namespace gpurent::model
