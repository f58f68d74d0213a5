#include "billing/spot_market.h"

#include <gtest/gtest.h>

namespace gpurent::billing {
namespace {

const Timestamp kT = from_unix_ms(3'000'000'000);

TEST(SpotPrice, FollowsTheSquareOfUtilisationFromFloorToCap) {
  EXPECT_EQ(spot_price(18'000'000, 400, 0), 7'200'000);
  EXPECT_EQ(spot_price(18'000'000, 400, 500), 7'200'000 + 10'800'000 / 4);
  EXPECT_EQ(spot_price(18'000'000, 400, 1000), 18'000'000);
  EXPECT_EQ(spot_price(18'000'000, 400, 5000), 18'000'000);  // clamped
  EXPECT_EQ(spot_price(1'000'001, 333, 777),
            333'000 + int64_t{1'000'001 - 333'000} * 777 * 777 / 1'000'000);
}

TEST(SpotMarket, RecordsChangesOnlyAndAnswersForAnyTime) {
  PriceBook book("CNY");
  SpotMarket market;
  EXPECT_EQ(market.price_at(book, "h100-80g", kT), 7'200'000);  // never observed: idle
  ASSERT_TRUE(market.observe("h100-80g", 500, kT, book));
  EXPECT_FALSE(market.observe("h100-80g", 500, kT + Millis(1000), book));  // unchanged
  const auto full = market.observe("h100-80g", 1000, kT + Millis(2000), book);
  ASSERT_TRUE(full);
  EXPECT_EQ(full->price, 18'000'000);
  EXPECT_EQ(market.utilisation_at("h100-80g", kT - Millis(1)), 0);  // before the first point
  EXPECT_EQ(market.utilisation_at("h100-80g", kT + Millis(1999)), 500);
  EXPECT_EQ(market.price_at(book, "h100-80g", kT + Millis(2000)), 18'000'000);
  EXPECT_FALSE(market.price_at(book, "mystery-12g", kT));
  const auto history = market.history("h100-80g", kT + Millis(1000), kT + Millis(5000));
  ASSERT_EQ(history.size(), 2u);  // the point in force at `from`, then the change
  EXPECT_EQ(history[0].at, kT);
  const auto first = market.span_at("h100-80g", kT + Millis(1000));
  EXPECT_EQ(first.utilisation_permille, 500);
  EXPECT_EQ(first.from, kT);
  EXPECT_EQ(first.until, kT + Millis(2000));
  EXPECT_EQ(market.span_at("h100-80g", kT + Millis(2000)).until, Timestamp::max());
  EXPECT_EQ(market.span_at("h100-80g", kT - Millis(1)).from, Timestamp::min());
  EXPECT_EQ(market.span_at("h100-80g", kT - Millis(1)).until, kT);
}

TEST(SpotMarket, KeepsABoundedHistory) {
  PriceBook book("CNY");
  SpotMarket market;
  for (size_t i = 0; i < kMaxSpotPointsPerType + 10; ++i) {
    market.observe("h100-80g", static_cast<int>(i % 2), kT + Millis(static_cast<int64_t>(i)), book);
  }
  EXPECT_EQ(market.history("h100-80g", kT, kT + Millis(1'000'000)).size(), kMaxSpotPointsPerType);
}

}  // namespace
}  // namespace gpurent::billing
