#include "billing/price_book.h"

#include <gtest/gtest.h>

namespace gpurent::billing {
namespace {

const Timestamp kNow = from_unix_ms(2'000'000'000);
const auto kCatalog = [](std::string_view type) {
  return type == "h100-80g" || type == "a100-80g";
};

TEST(PriceBook, StartsFromTheCatalogAndKnowsNothingElse) {
  PriceBook book("CNY");
  EXPECT_EQ(book.on_demand_price("h100-80g", kNow), 18'000'000);
  EXPECT_FALSE(book.on_demand_price("mystery-12g", kNow));
  EXPECT_EQ(book.currency(), "CNY");
  EXPECT_EQ(book.at(from_unix_ms(0)).version, 1);
  EXPECT_EQ(book.at(kNow).minimum_billed_seconds, 60);
  EXPECT_EQ(book.at(kNow).spot_floor_permille, 400);
}

TEST(PriceBook, AChangeIsMergedAndTakesEffectAtItsTime) {
  PriceBook book("CNY");
  const auto v2 = book.set({.effective_at = kNow + Millis(60'000),
                            .gpu_per_hour = {{"h100-80g", 20'000'000}, {"a100-80g", std::nullopt}},
                            .cpu_per_core_hour = 50'000},
                           kNow, kCatalog);
  ASSERT_TRUE(v2) << v2.error().message;
  EXPECT_EQ(v2->version, 2);
  EXPECT_EQ(v2->set_at, kNow);
  EXPECT_EQ(book.on_demand_price("h100-80g", kNow), 18'000'000);
  EXPECT_EQ(book.on_demand_price("h100-80g", kNow + Millis(60'000)), 20'000'000);
  EXPECT_FALSE(book.on_demand_price("a100-80g", kNow + Millis(60'000)));
  // Carried over: what the change did not name.
  EXPECT_EQ(book.at(kNow + Millis(60'000)).storage_per_gb_month, 500'000);
  EXPECT_EQ(book.upcoming(kNow).size(), 1u);
  EXPECT_TRUE(book.upcoming(kNow + Millis(60'000)).empty());
  EXPECT_EQ(book.next_change(kNow), kNow + Millis(60'000));
  EXPECT_EQ(book.next_change(kNow + Millis(59'999)), kNow + Millis(60'000));
  EXPECT_EQ(book.next_change(kNow + Millis(60'000)), Timestamp::max());
  // Restored from what was stored, the book is the same.
  PriceBook restored("CNY");
  ASSERT_TRUE(restored.restore(book.history()));
  EXPECT_EQ(restored.on_demand_price("h100-80g", kNow + Millis(60'000)), 20'000'000);
}

TEST(PriceBook, RefusesThePastBadPricesAndUnknownTypes) {
  PriceBook book("CNY");
  const auto code = [&](PriceChange change) {
    auto set = book.set(change, kNow, kCatalog);
    return set ? std::string("ok") : set.error().code;
  };
  EXPECT_EQ(code({.effective_at = kNow - Millis(1)}), "effective_at_in_past");
  EXPECT_EQ(code({.gpu_per_hour = {{"mystery-12g", 1}}}), "unknown_gpu_type");
  EXPECT_EQ(code({.gpu_per_hour = {{"h100-80g", -1}}}), "invalid_field");
  EXPECT_EQ(code({.cpu_per_core_hour = -5}), "invalid_field");
  EXPECT_EQ(code({.storage_per_gb_month = kMaxPrice + 1}), "invalid_field");
  EXPECT_EQ(code({.minimum_billed_seconds = -1}), "invalid_field");
  EXPECT_EQ(code({.spot_floor_permille = 1001}), "invalid_field");
  EXPECT_EQ(code({.currency = "USD"}), "currency_fixed");
  EXPECT_EQ(book.history().size(), 1u);  // nothing half-written
  EXPECT_EQ(code({.currency = "CNY"}), "ok");
}

}  // namespace
}  // namespace gpurent::billing
