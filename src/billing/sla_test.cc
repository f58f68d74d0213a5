#include "billing/sla.h"

#include <gtest/gtest.h>

namespace gpurent::billing {
namespace {

TEST(Sla, TheScheduleAtItsBoundaries) {
  // 1000 s in all: 999 up is exactly 99.9 %: no credit; 998 is below.
  EXPECT_EQ(sla_credit_percent({.up_seconds = 999, .down_seconds = 1}), 0);
  EXPECT_EQ(sla_credit_percent({.up_seconds = 998, .down_seconds = 2}), 10);
  EXPECT_EQ(sla_credit_percent({.up_seconds = 990, .down_seconds = 10}), 10);  // exactly 99 %
  EXPECT_EQ(sla_credit_percent({.up_seconds = 989, .down_seconds = 11}), 25);
  EXPECT_EQ(sla_credit_percent({.up_seconds = 950, .down_seconds = 50}), 25);  // exactly 95 %
  EXPECT_EQ(sla_credit_percent({.up_seconds = 949, .down_seconds = 51}), 50);
  EXPECT_EQ(sla_credit_percent({.up_seconds = 0, .down_seconds = 5}), 50);
  EXPECT_EQ(sla_credit_percent({.up_seconds = 5, .down_seconds = 0}), 0);
}

TEST(Sla, TheCreditIsAShareOfTheChargesRoundedOnceTowardZero) {
  EXPECT_EQ(sla_credit({.up_seconds = 998, .down_seconds = 2, .gpu_charges = 1'234'567}), 123'456);
  EXPECT_EQ(sla_credit({.up_seconds = 989, .down_seconds = 11, .gpu_charges = 1'234'567}), 308'641);
  EXPECT_EQ(sla_credit({.up_seconds = 1, .down_seconds = 1, .gpu_charges = 3}), 1);
  EXPECT_EQ(sla_credit({.up_seconds = 999, .down_seconds = 1, .gpu_charges = 1'000'000}), 0);
  // A month of seconds times a large charge does not overflow.
  EXPECT_EQ(
      sla_credit(
          {.up_seconds = 2'000'000, .down_seconds = 600'000, .gpu_charges = int64_t{1} << 60}),
      (int64_t{1} << 60) / 2);
}

}  // namespace
}  // namespace gpurent::billing
