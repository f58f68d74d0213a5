#include "billing/billing.h"

#include <gtest/gtest.h>

namespace gpurent::billing {
namespace {

model::UsageRecord run_of(Micros price, int gpus) {
  model::UsageRecord usage;
  usage.tenant_id = "t-1";
  usage.instance_id = "i-1";
  usage.run = 1;
  usage.gpu_count = gpus;
  usage.price_per_gpu_hour = price;
  usage.started_at = from_unix_ms(1'000'000);
  usage.metered_until = usage.started_at;
  return usage;
}

TEST(Metering, ChargesWholeSecondsTimesThePrice) {
  auto usage = run_of(18'000'000, 2);  // 18 CNY per GPU-hour = 5000 micros per GPU-second
  const auto transfer = meter_run(usage, usage.started_at + Millis(61'999));
  ASSERT_TRUE(transfer);
  EXPECT_EQ(usage.billed_seconds, 61);
  EXPECT_EQ(transfer->amount, 61 * 2 * 5000);
  EXPECT_EQ(transfer->id, "usage:i-1:1:61");
  EXPECT_EQ(transfer->from_account, "tenant:t-1:cash");
  EXPECT_EQ(transfer->to_account, "platform:revenue");
  // The 999 ms remainder carries into the next meter.
  EXPECT_EQ(usage.metered_until, usage.started_at + Millis(61'000));
}

TEST(Metering, ManySmallStepsEqualOneBigStepForAnAwkwardPrice) {
  const Micros price = 1'234'567;  // not divisible by 3600
  auto stepwise = run_of(price, 3);
  auto at_once = run_of(price, 3);
  Micros stepwise_total = 0;
  for (int ms = 700; ms <= 3'600'000; ms += 700) {
    if (auto t = meter_run(stepwise, stepwise.started_at + Millis(ms))) stepwise_total += t->amount;
  }
  const auto end = at_once.started_at + Millis(3'600'000 - 3'600'000 % 700);
  const auto single = meter_run(at_once, end);
  ASSERT_TRUE(single);
  EXPECT_EQ(stepwise.billed_seconds, at_once.billed_seconds);
  EXPECT_EQ(stepwise_total, single->amount);
  EXPECT_EQ(stepwise_total, charge_for_seconds(price, 3000, at_once.billed_seconds));
}

TEST(Metering, NothingDueWithinTheSameSecondOrBackwards) {
  auto usage = run_of(18'000'000, 1);
  EXPECT_FALSE(meter_run(usage, usage.started_at + Millis(999)));
  EXPECT_FALSE(meter_run(usage, usage.started_at - Millis(5000)));
  EXPECT_EQ(usage.billed_seconds, 0);
}

TEST(Ledger, BalancesAlwaysSumToZero) {
  Ledger ledger;
  ASSERT_TRUE(ledger.post({"topup:1",
                           {},
                           "external:topups",
                           "tenant:t-1:cash",
                           500,
                           model::TransferKind::kTopup,
                           "t-1",
                           ""}));
  ASSERT_TRUE(ledger.post({"usage:1",
                           {},
                           "tenant:t-1:cash",
                           "platform:revenue",
                           120,
                           model::TransferKind::kUsage,
                           "t-1",
                           "i-1"}));
  EXPECT_EQ(ledger.balance("tenant:t-1:cash"), 380);
  EXPECT_EQ(ledger.balance("platform:revenue"), 120);
  EXPECT_EQ(ledger.balance("external:topups"), -500);
  EXPECT_EQ(ledger.total(), 0);
  EXPECT_EQ(ledger.transfers_of("t-1").size(), 2u);
  EXPECT_FALSE(ledger.post({"bad", {}, "a", "b", 0, model::TransferKind::kUsage, "", ""}));
  EXPECT_FALSE(ledger.post({"bad", {}, "a", "a", 5, model::TransferKind::kUsage, "", ""}));
  EXPECT_EQ(ledger.total(), 0);
}

TEST(PriceBook, KnowsCatalogPricesAndNothingElse) {
  PriceBook book("CNY");
  EXPECT_EQ(book.on_demand_price("h100-80g"), 18'000'000);
  EXPECT_FALSE(book.on_demand_price("mystery-12g"));
  EXPECT_EQ(book.currency(), "CNY");
}

}  // namespace
}  // namespace gpurent::billing
