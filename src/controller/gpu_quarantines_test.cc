#include "controller/gpu_quarantines.h"

#include <gtest/gtest.h>

namespace gpurent::controller {
namespace {

model::GpuSample ecc(std::string uuid, int64_t dbe_total) {
  model::GpuSample sample;
  sample.uuid = std::move(uuid);
  sample.ecc_dbe_total = dbe_total;
  return sample;
}

class GpuQuarantinesTest : public ::testing::Test {
 protected:
  GpuQuarantinesTest() {
    model::Node node;
    node.id = "n-1";
    node.name = "gpu-1";
    for (int i = 0; i < 2; ++i) {
      node.gpus.push_back({.uuid = "GPU-" + std::to_string(i), .index = i, .type = "h100-80g"});
    }
    node_ = &nodes_.add(std::move(node));
  }

  ManualClock clock_{Timestamp(Millis(1'800'000'000'000))};
  ChangeSet changes_;
  NodeRegistry nodes_;
  model::Node* node_ = nullptr;
  GpuQuarantines quarantines_{{clock_, changes_, nodes_}};
};

TEST_F(GpuQuarantinesTest, AFatalXidOnTheNodesOwnGpuIsFailingAndOthersAreNot) {
  model::TelemetryBatch batch;
  batch.xids = {{.uuid = "GPU-0", .code = 79},
                {.uuid = "GPU-1", .code = 13},       // not fatal
                {.uuid = "GPU-other", .code = 79}};  // not this node's
  const auto failing = quarantines_.detect(*node_, batch);
  ASSERT_EQ(failing.by_uuid.size(), 1u);
  EXPECT_EQ(failing.by_uuid.at("GPU-0").cause, "xid");
  EXPECT_EQ(failing.by_uuid.at("GPU-0").xid, 79);
  EXPECT_FALSE(failing.seen_changed);
}

TEST_F(GpuQuarantinesTest, AnEccRiseAboveTheLastCountSeenIsFailingAndALowerCountIsANewBaseline) {
  model::TelemetryBatch first;
  first.samples = {ecc("GPU-0", 3), ecc("GPU-1", 0)};
  auto failing = quarantines_.detect(*node_, first);
  EXPECT_TRUE(failing.by_uuid.empty());  // the baseline
  EXPECT_TRUE(failing.seen_changed);
  EXPECT_EQ(node_->ecc_dbe_seen.at("GPU-0"), 3);

  model::TelemetryBatch reload;
  reload.samples = {ecc("GPU-0", 0)};  // the driver reloaded
  failing = quarantines_.detect(*node_, reload);
  EXPECT_TRUE(failing.by_uuid.empty());
  EXPECT_EQ(node_->ecc_dbe_seen.at("GPU-0"), 0);

  model::TelemetryBatch rise;
  rise.samples = {ecc("GPU-0", 0), ecc("GPU-1", 2)};
  failing = quarantines_.detect(*node_, rise);
  ASSERT_EQ(failing.by_uuid.size(), 1u);
  EXPECT_EQ(failing.by_uuid.at("GPU-1").cause, "ecc_dbe");
  EXPECT_EQ(failing.by_uuid.at("GPU-1").message, "double-bit ECC errors rose from 0 to 2");
}

TEST_F(GpuQuarantinesTest, AQuarantinedGpuIsNotFailingAgainAndIsReleasedOnce) {
  const model::Gpu& gpu = node_->gpus[1];
  quarantines_.add(*node_, gpu, {.cause = "xid", .xid = 48, .message = "fatal XID 48"});
  EXPECT_TRUE(quarantines_.quarantined("GPU-1"));
  ASSERT_EQ(quarantines_.on_node("n-1").size(), 1u);
  EXPECT_EQ(quarantines_.on_node("n-1")[0]->gpu_index, 1);
  EXPECT_TRUE(quarantines_.on_node("n-unknown").empty());
  model::Instance holder;
  holder.gpus = {"GPU-0", "GPU-1"};
  EXPECT_TRUE(quarantines_.holds_quarantined(holder));

  model::TelemetryBatch batch;
  batch.xids = {{.uuid = "GPU-1", .code = 79}};
  EXPECT_TRUE(quarantines_.detect(*node_, batch).by_uuid.empty());

  const model::Principal op{"", "key-op", model::Role::kOperator};
  const auto released = quarantines_.release(op, *node_, gpu);
  ASSERT_TRUE(released) << released.error().message;
  EXPECT_EQ(released->released_by, "key-op");
  EXPECT_FALSE(quarantines_.quarantined("GPU-1"));
  EXPECT_EQ(quarantines_.release(op, *node_, gpu).error().code, "gpu_not_quarantined");
  EXPECT_EQ(changes_.gpu_quarantines.size(), 2u);  // added, released
}

}  // namespace
}  // namespace gpurent::controller
