// A piece of training timed on measured throughput and priced at an hourly charge: rounded up to
// the second, linear in GPUs and in a GPU's share, at least the minimum billed.
#include "billing/work_estimate.h"

#include <gtest/gtest.h>

namespace gpurent::billing {
namespace {

Estimate hourly(Micros total_per_hour, int64_t minimum_seconds = 60) {
  Estimate e;
  e.total_per_hour = total_per_hour;
  e.minimum_billed_seconds = minimum_seconds;
  return e;
}

TEST(WorkEstimate, ImagesOverThroughputRoundedUpAndPricedBySecond) {
  // 90 epochs of ImageNet on 8 GPUs at 3,000 images a second each: 4,804.38... s.
  const auto e = estimate_work(90 * kImageNetTrainingImages, 3'000 * 3600, 8, 1000,
                               hourly(8 * 20 * kMicrosPerUnit));
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->images_per_hour, 8 * 3'000 * 3600);
  EXPECT_EQ(e->seconds, 4'805);
  EXPECT_EQ(e->cost, charge_for_seconds(160 * kMicrosPerUnit, 1000, 4'805));
  EXPECT_EQ(e->cost, 213'555'555);  // 160 an hour for 4,805 s, toward zero
}

TEST(WorkEstimate, AShareOfAGpuGetsItsShareOfTheThroughputAndTheMinimumIsCharged) {
  const auto half = estimate_work(3600, 3600, 1, 500, hourly(kMicrosPerUnit, 7'200));
  ASSERT_TRUE(half);
  EXPECT_EQ(half->images_per_hour, 1800);
  EXPECT_EQ(half->seconds, 7'200);
  const auto quick = estimate_work(1, 3600 * 1000, 1, 1000, hourly(3600 * kMicrosPerUnit, 60));
  ASSERT_TRUE(quick);
  EXPECT_EQ(quick->seconds, 1);
  EXPECT_EQ(quick->cost, 60 * kMicrosPerUnit) << "the minimum billed, not the one second";
}

TEST(WorkEstimate, NothingToTimeIsRefused) {
  for (const auto& [images, rate, gpus, milli] :
       {std::tuple{0L, 3600L, 1, 1000}, std::tuple{10L, 0L, 1, 1000},
        std::tuple{10L, 3600L, 0, 1000}, std::tuple{10L, 1L, 1, 1}}) {
    const auto e = estimate_work(images, rate, gpus, milli, hourly(kMicrosPerUnit));
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().code, "invalid_work");
  }
}

}  // namespace
}  // namespace gpurent::billing
