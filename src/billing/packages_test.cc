#include "billing/packages.h"

#include <gtest/gtest.h>

#include "billing/billing.h"
#include "billing/price_book.h"
#include "billing/spot_market.h"

namespace gpurent::billing {
namespace {

const Timestamp kStart = from_unix_ms(1'000'000);

model::UsageRecord run_of(int gpus, int milli = 1000) {
  model::UsageRecord usage;
  usage.tenant_id = "t-1";
  usage.instance_id = "i-1";
  usage.run = 1;
  usage.gpu_type = "h100-80g";
  usage.gpu_count = gpus;
  usage.gpu_milli = milli;
  usage.price_per_gpu_hour = 18'000'000;  // 5000 micros per GPU-second
  usage.started_at = kStart;
  usage.metered_until = kStart;
  return usage;
}

model::Package package_of(std::string id, int64_t gpu_hours, Micros price, Timestamp expires) {
  return model::Package{.id = std::move(id),
                        .tenant_id = "t-1",
                        .product = "p",
                        .gpu_type = "h100-80g",
                        .capacity = gpu_hours * model::kMilliGpuSecondsPerGpuHour,
                        .price = price,
                        .bought_at = kStart,
                        .expires_at = expires};
}

// What the meter posts for [metered_until, until): package draws first, then cash.
Micros meter(model::UsageRecord& usage, Timestamp until, std::vector<model::Package*> packages,
             Micros* recognised = nullptr) {
  for (const auto& t : draw_packages(usage, until, packages)) {
    if (recognised) *recognised += t.amount;
  }
  static const PriceBook book("CNY");  // the catalog's prices: h100-80g at 18 CNY a GPU-hour
  static const SpotMarket spot;
  const auto cash = meter_usage({book, spot}, usage, until);
  return cash ? cash->amount : 0;
}

TEST(Packages, CoverTheFirstSecondsAndEarnTheirValueProRata) {
  auto usage = run_of(1);
  auto package = package_of("pkg-1", 1, 36'000'000, kStart + std::chrono::days(30));
  Micros recognised = 0;
  EXPECT_EQ(meter(usage, kStart + Millis(100'500), {&package}, &recognised), 0);
  EXPECT_EQ(usage.package_seconds, 100);
  EXPECT_EQ(usage.billed_seconds, 0);
  EXPECT_EQ(package.used, 100'000);
  EXPECT_EQ(recognised, 1'000'000);  // 100 of 3600 seconds of 36 CNY
  EXPECT_EQ(package.recognised, recognised);
  // The half second carries over, as it does for cash.
  EXPECT_EQ(usage.metered_until, kStart + Millis(100'000));
}

TEST(Packages, AnExhaustedPackageLeavesTheRestToCash) {
  auto usage = run_of(2);  // two GPUs draw 2000 milli-GPU-seconds a second
  auto package = package_of("pkg-1", 1, 36'000'000, kStart + std::chrono::days(30));
  Micros recognised = 0;
  // 1 GPU-hour covers 1800 s of two GPUs; the remaining 200 s are charged to cash.
  EXPECT_EQ(meter(usage, kStart + Millis(2'000'000), {&package}, &recognised), 200 * 2 * 5000);
  EXPECT_EQ(usage.package_seconds, 1800);
  EXPECT_EQ(usage.billed_seconds, 200);
  EXPECT_EQ(recognised, 36'000'000);
  EXPECT_FALSE(expire_package(package, package.expires_at));  // nothing left to earn
}

TEST(Packages, CoverOnlySecondsBeforeTheirExpiryAndExpireTheRemainder) {
  auto usage = run_of(1);
  auto package = package_of("pkg-1", 1, 36'000'000, kStart + Millis(50'000));
  Micros recognised = 0;
  EXPECT_EQ(meter(usage, kStart + Millis(100'000), {&package}, &recognised), 50 * 5000);
  EXPECT_EQ(usage.package_seconds, 50);
  EXPECT_EQ(usage.billed_seconds, 50);
  EXPECT_EQ(recognised, 500'000);
  EXPECT_FALSE(expire_package(package, package.expires_at - Millis(1)));
  const auto expiry = expire_package(package, package.expires_at);
  ASSERT_TRUE(expiry);
  EXPECT_EQ(expiry->id, "package-expiry:pkg-1");
  EXPECT_EQ(expiry->amount, 36'000'000 - 500'000);
  EXPECT_EQ(package.recognised, package.price);
  EXPECT_FALSE(expire_package(package, package.expires_at + Millis(1)));  // once
  // Once expired it covers nothing more.
  EXPECT_EQ(meter(usage, kStart + Millis(110'000), {&package}), 10 * 5000);
}

TEST(Packages, EarliestExpiryFirstThenTheNext) {
  auto usage = run_of(1);
  auto soon = package_of("pkg-soon", 1, 3'600'000, kStart + Millis(30'000));
  auto later = package_of("pkg-later", 1, 7'200'000, kStart + std::chrono::days(1));
  EXPECT_EQ(meter(usage, kStart + Millis(100'000), {&soon, &later}), 0);
  EXPECT_EQ(soon.used, 30'000);
  EXPECT_EQ(later.used, 70'000);
  EXPECT_EQ(soon.recognised, 30'000);    // 3.6 CNY / 3600 s
  EXPECT_EQ(later.recognised, 140'000);  // 7.2 CNY / 3600 s
}

TEST(Packages, FractionalGpusDrawProRata) {
  auto usage = run_of(1, 250);
  auto package = package_of("pkg-1", 1, 36'000'000, kStart + std::chrono::days(1));
  EXPECT_EQ(meter(usage, kStart + Millis(4 * 3600'000), {&package}), 0);
  EXPECT_EQ(package.used, package.capacity);  // a quarter GPU for four hours is one GPU-hour
}

TEST(Packages, ManySmallDrawsEarnWhatOneBigDrawDoes) {
  const Micros price = 1'234'567;  // not divisible by 3600
  auto stepwise_usage = run_of(3);
  auto once_usage = run_of(3);
  auto stepwise = package_of("pkg-1", 7, price, kStart + std::chrono::days(1));
  auto once = package_of("pkg-1", 7, price, kStart + std::chrono::days(1));
  Micros stepwise_total = 0;
  Micros once_total = 0;
  for (int ms = 700; ms <= 3'000'000; ms += 700) {
    meter(stepwise_usage, kStart + Millis(ms), {&stepwise}, &stepwise_total);
  }
  meter(once_usage, kStart + Millis(3'000'000 - 3'000'000 % 700), {&once}, &once_total);
  EXPECT_EQ(stepwise.used, once.used);
  EXPECT_EQ(stepwise_total, once_total);
  EXPECT_EQ(stepwise_total, charge_pro_rata(price, once.used, 1, once.capacity));
  // And with the expiry, exactly the price, whatever the rounding.
  stepwise_total += expire_package(stepwise, stepwise.expires_at)->amount;
  EXPECT_EQ(stepwise_total, price);
}

TEST(Packages, PurchaseMovesCashIntoThePackageAccount) {
  const auto package = package_of("pkg-1", 1, 36'000'000, kStart + std::chrono::days(1));
  const auto t = package_purchase(package);
  EXPECT_EQ(t.id, "package:pkg-1");
  EXPECT_EQ(t.from_account, "tenant:t-1:cash");
  EXPECT_EQ(t.to_account, "tenant:t-1:package:pkg-1");
  EXPECT_EQ(t.amount, 36'000'000);
  EXPECT_EQ(t.kind, model::TransferKind::kPurchase);
}

}  // namespace
}  // namespace gpurent::billing
