#include "model/codec.h"

#include <gtest/gtest.h>

#include "model/desired_state_json.h"

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
  v.spec.volumes = {{"v-1", "/data"}, {"v-2", "/mnt/\"odd\" name"}};
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
  v.master_address = "node-a";
  v.master_port = 29501;
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

// Rows written before the gang port was a number hold it as a string, and those of members that
// were never placed leave it out.
TEST(CodecTest, AnInstanceRowReadsTheGangPortInEitherForm) {
  const auto no_job = [](std::string_view) -> const Job* { return nullptr; };
  Json row = Json(full_instance());
  row["master_port"] = "29502";
  EXPECT_EQ(instance_from_row(row, no_job).master_port, 29502);
  row.erase("master_port");
  row.erase("master_addr");
  EXPECT_EQ(instance_from_row(row, no_job).master_port, 0);
  EXPECT_EQ(instance_from_row(row, no_job).master_address, "");
}

TEST(CodecTest, TheDirectUsageRecordWriterWritesWhatNlohmannDumps) {
  UsageRecord usage{.id = "u-\"1\"",
                    .tenant_id = "t-1",
                    .instance_id = "i-1",
                    .run = 3,
                    .kind = UsageKind::kStoppedDisk,
                    .pricing = PricingModel::kSpot,
                    .gpu_type = "h100-80g",
                    .gpu_count = 2,
                    .gpu_milli = 500,
                    .cpu = 8,
                    .memory_gb = 64,
                    .disk_gb = 100,
                    .price_per_gpu_hour = 18'000'000,
                    .started_at = from_unix_ms(1'790'000'000'000),
                    .metered_until = from_unix_ms(1'790'000'061'000),
                    .billed_seconds = 61,
                    .charged = 305'000,
                    .segment_rate = 9'000'000'000,
                    .segment_seconds = 60,
                    .segment_charged = 300'000,
                    .package_seconds = 7};
  EXPECT_EQ(usage_record_json(usage), Json(usage).dump());
  usage.ended_at = from_unix_ms(1'790'000'062'000);
  EXPECT_EQ(usage_record_json(usage), Json(usage).dump());
  EXPECT_EQ(Json(Json::parse(usage_record_json(usage)).get<UsageRecord>()).dump(),
            Json(usage).dump());
}

TEST(CodecTest, TheDirectStringsWriterWritesWhatNlohmannDumps) {
  for (const std::vector<std::string>& values :
       {std::vector<std::string>{}, std::vector<std::string>{"i-0123456789abcdef"},
        std::vector<std::string>{"a\"b", "tab\there", std::string("nul\0x", 5), "\x1f"}}) {
    EXPECT_EQ(strings_json(values), Json(values).dump());
  }
}

TEST(CodecTest, TheDirectDesiredStateWriterWritesWhatNlohmannDumps) {
  DesiredState desired{"n-1", 1'048'577, {}, {}};
  EXPECT_EQ(desired_state_json(desired), Json(desired).dump());
  desired.volumes = {"v-1", "v-2"};
  desired.workloads.push_back({.instance_id = "i-1",
                               .run = 2,
                               .should_run = true,
                               .image = "pytorch/pytorch:2.5.1",
                               .command = {"python", "-c", "print(\"a\\tb\")"},
                               .env = {{"RANK", "8"}, {"A", "x\ny"}, {"C", "\x1f\\\x01z\b\f\r"}},
                               .gpus = {"GPU-a", "GPU-b"},
                               .cpu = 4,
                               .memory_gb = 64,
                               .volumes = {{"v-1", "/data"}, {"v-2", "/scratch\tx"}},
                               .services = {"jupyter", "tensorboard"}});
  desired.workloads.push_back({.instance_id = "i-2", .run = 1, .should_run = false});
  desired.workloads.back().job = JobMemberPlacement{.job_id = "j-1",
                                                    .index = 7,
                                                    .array_size = 8,
                                                    .nodes = 2,
                                                    .rank = 1,
                                                    .gpus_per_node = 4,
                                                    .master_address = "10.0.0.\"1",
                                                    .master_port = 29501};
  EXPECT_EQ(desired_state_json(desired), Json(desired).dump());
  // The agent reads back what the server wrote, volumes and placements included.
  auto read = read_desired_state(desired_state_json(desired));
  ASSERT_TRUE(read) << read.error().message;
  const DesiredState& back = *read;
  EXPECT_EQ(Json(back), Json(desired));  // every member, as written
  EXPECT_EQ(back.volumes, desired.volumes);
  EXPECT_EQ(back.workloads[0].volumes, desired.workloads[0].volumes);
  EXPECT_FALSE(back.workloads[0].job);
  ASSERT_TRUE(back.workloads[1].job);
  EXPECT_EQ(Json(*back.workloads[1].job), Json(*desired.workloads[1].job));
  // torchrun's view of rank 1 of a gang of two nodes of four GPUs.
  const auto env = job_member_env(*back.workloads[1].job);
  EXPECT_EQ(env.at("RANK"), "4");
  EXPECT_EQ(env.at("WORLD_SIZE"), "8");
  EXPECT_EQ(env.at("NODE_RANK"), "1");
  EXPECT_EQ(env.at("PET_NPROC_PER_NODE"), "4");
  EXPECT_EQ(env.at("MASTER_PORT"), "29501");
  EXPECT_EQ(env.at("GPURENT_ARRAY_INDEX"), "7");
  EXPECT_EQ(env.size(), 15u);
  // An older server's answer has no volumes: none.
  Json old = desired;
  old.erase("volumes");
  old["workloads"][0].erase("volumes");
  const auto without = read_desired_state(old.dump());
  ASSERT_TRUE(without) << without.error().message;
  EXPECT_TRUE(without->volumes.empty());
  EXPECT_TRUE(without->workloads[0].volumes.empty());
}

TEST(CodecTest, AVolumeRoundTripsThroughJson) {
  Volume v{.id = "v-1",
           .tenant_id = "t-1",
           .name = "data",
           .size_gb = 100,
           .node_id = "n-1",
           .state = VolumeState::kDeleted,
           .created_at = from_unix_ms(1000),
           .deleted_at = from_unix_ms(9000),
           .price_per_gb_month = 500'000,
           .metered_until = from_unix_ms(8000),
           .billed_seconds = 7,
           .charged = 134};
  const Volume back = Json(v).get<Volume>();
  EXPECT_EQ(Json(back).dump(), Json(v).dump());
  EXPECT_EQ(back.state, VolumeState::kDeleted);
  EXPECT_EQ(back.deleted_at, v.deleted_at);
  Json bad = v;
  bad["state"] = "gone";
  EXPECT_THROW(bad.get<Volume>(), std::exception);
}

// A node's toolkit is stored with it; a record from before it was kept has none.
TEST(CodecTest, ANodesContainerToolkitRoundTripsThroughJsonAndMayBeAbsent) {
  Node node{.id = "n-1", .name = "gpu-01", .container_runtime = false};
  node.container_toolkit = ContainerToolkit{
      .version = "1.17.7", .gpu_containers = false, .note = "containers get no GPUs here: old"};
  const Json stored = node;
  EXPECT_EQ(stored["container_toolkit"]["version"], "1.17.7");
  EXPECT_EQ(stored.get<Node>().container_toolkit, node.container_toolkit);
  Json older = stored;
  older.erase("container_toolkit");
  EXPECT_FALSE(older.get<Node>().container_toolkit);
  node.container_toolkit.reset();
  EXPECT_FALSE(Json(node).contains("container_toolkit"));
}

TEST(VolumeTest, MountsMustBeAbsoluteNormalisedDistinctAndOutsideSystemPaths) {
  const auto ok = [](const std::vector<VolumeMount>& mounts) {
    return validate_volume_mounts(mounts).has_value();
  };
  EXPECT_TRUE(ok({}));
  EXPECT_TRUE(ok({{"v-1", "/data"}, {"v-2", "/mnt/scratch"}, {"v-3", "/workspace/cache"}}));
  EXPECT_TRUE(ok({{"v-1", "/data"}, {"v-2", "/data2"}}));  // a prefix, not a parent
  for (const char* path :
       {"", "data", "/", "/data/", "//data", "/a//b", "/a/./b", "/a/../b", "/..", "/proc",
        "/proc/x", "/sys/fs", "/dev", "/dev/shm", "/workspace", "/a:b", "/a,b", "/a\nb"}) {
    EXPECT_FALSE(ok({{"v-1", path}})) << path;
  }
  EXPECT_TRUE(ok({{"v-1", "/process"}, {"v-2", "/device"}}));
  EXPECT_FALSE(ok({{"v-1", std::string(kMaxMountPathLength + 1, 'a').replace(0, 1, "/")}}));
  EXPECT_FALSE(ok({{"v-1", "/data"}, {"v-1", "/other"}}));       // one volume twice
  EXPECT_FALSE(ok({{"v-1", "/data"}, {"v-2", "/data"}}));        // one path twice
  EXPECT_FALSE(ok({{"v-1", "/data"}, {"v-2", "/data/inner"}}));  // nested
  EXPECT_FALSE(ok({{"../x", "/data"}}));
  EXPECT_FALSE(ok({{".hidden", "/data"}}));
  EXPECT_FALSE(ok({{"", "/data"}}));
  std::vector<VolumeMount> many;
  for (size_t i = 0; i <= kMaxVolumeMounts; ++i) {
    many.push_back({"v-" + std::to_string(i), "/m" + std::to_string(i)});
  }
  EXPECT_FALSE(ok(many));
  many.pop_back();
  EXPECT_TRUE(ok(many));
  const auto error = validate_volume_mounts({{"v-1", "/proc/self"}});
  EXPECT_EQ(error.error().code, "invalid_field");
  EXPECT_NE(error.error().message.find("/proc"), std::string::npos);

  EXPECT_TRUE(valid_volume_name("my-data_1.v2"));
  EXPECT_FALSE(valid_volume_name(""));
  EXPECT_FALSE(valid_volume_name("has space"));
  EXPECT_FALSE(valid_volume_name(".."));
  EXPECT_FALSE(valid_volume_name("."));
  EXPECT_FALSE(valid_volume_name(".hidden"));
  EXPECT_FALSE(valid_volume_name("-rf"));
  EXPECT_FALSE(valid_volume_name(std::string(kMaxVolumeNameLength + 1, 'a')));
}

}  // namespace
}  // namespace gpurent::model
