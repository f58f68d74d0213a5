#include "billing/billing.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace gpurent::billing {
namespace {

using model::PricingModel;
using model::UsageKind;

const Timestamp kStart = from_unix_ms(1'000'000'000);
const auto kAlways = [](std::string_view) { return true; };

// Metering against one book and market, as the controller does.
class Metering : public testing::Test {
 protected:
  model::UsageRecord run_of(Micros gpu_price, int gpus,
                            PricingModel pricing = PricingModel::kOnDemand) {
    if (gpu_price != 18'000'000) {
      EXPECT_TRUE(
          book_.set({.effective_at = kStart - Millis(1), .gpu_per_hour = {{"h100-80g", gpu_price}}},
                    kStart - Millis(1), kAlways));
    }
    model::UsageRecord usage;
    usage.tenant_id = "t-1";
    usage.instance_id = "i-1";
    usage.run = 1;
    usage.pricing = pricing;
    usage.gpu_type = "h100-80g";
    usage.gpu_count = gpus;
    usage.started_at = kStart;
    usage.metered_until = kStart;
    return usage;
  }
  // Sets prices from `at` (relative to the start).
  void change_at(Millis at, PriceChange change) {
    change.effective_at = kStart + at;
    ASSERT_TRUE(book_.set(change, kStart - Millis(1), kAlways));
  }
  std::optional<model::Transfer> meter(model::UsageRecord& usage, Millis to) {
    return meter_usage(rates(), usage, kStart + to);
  }
  Rates rates() const { return {book_, spot_}; }

  PriceBook book_{"CNY"};
  SpotMarket spot_;
};

TEST_F(Metering, ChargesWholeSecondsTimesThePrice) {
  auto usage = run_of(18'000'000, 2);  // 18 CNY per GPU-hour = 5000 micros per GPU-second
  const auto transfer = meter(usage, Millis(61'999));
  ASSERT_TRUE(transfer);
  EXPECT_EQ(usage.billed_seconds, 61);
  EXPECT_EQ(transfer->amount, 61 * 2 * 5000);
  EXPECT_EQ(transfer->id, "usage:i-1:1:61");
  EXPECT_EQ(transfer->from_account, "tenant:t-1:cash");
  EXPECT_EQ(transfer->to_account, "platform:revenue");
  EXPECT_EQ(usage.price_per_gpu_hour, 18'000'000);
  // The 999 ms remainder carries into the next meter.
  EXPECT_EQ(usage.metered_until, kStart + Millis(61'000));
}

TEST_F(Metering, ManySmallStepsEqualOneBigStepForAnAwkwardPrice) {
  const Micros price = 1'234'567;  // not divisible by 3600
  auto stepwise = run_of(price, 3);
  auto at_once = stepwise;
  Micros stepwise_total = 0;
  for (int ms = 700; ms <= 3'600'000; ms += 700) {
    if (auto t = meter(stepwise, Millis(ms))) stepwise_total += t->amount;
  }
  const auto single = meter(at_once, Millis(3'600'000 - 3'600'000 % 700));
  ASSERT_TRUE(single);
  EXPECT_EQ(stepwise.billed_seconds, at_once.billed_seconds);
  EXPECT_EQ(stepwise_total, single->amount);
  EXPECT_EQ(stepwise_total, charge_for_seconds(price, 3000, at_once.billed_seconds));
}

TEST_F(Metering, NothingDueWithinTheSameSecondOrBackwards) {
  auto usage = run_of(18'000'000, 1);
  EXPECT_FALSE(meter(usage, Millis(999)));
  EXPECT_FALSE(meter(usage, Millis(-5000)));
  EXPECT_EQ(usage.billed_seconds, 0);
}

TEST_F(Metering, APriceChangeMidRunSplitsTheIntervalAtItsSecond) {
  auto usage = run_of(18'000'000, 1);  // 5000 micros a second
  // 36 CNY per GPU-hour (10,000 a second) from 100.5 s: second 100 still costs the old price.
  change_at(Millis(100'500), {.gpu_per_hour = {{"h100-80g", 36'000'000}}});
  const auto transfer = meter(usage, Millis(200'000));
  ASSERT_TRUE(transfer);
  EXPECT_EQ(transfer->amount, 101 * 5000 + 99 * 10'000);
  EXPECT_EQ(usage.price_per_gpu_hour, 36'000'000);
  // The quote of the same interval agrees, segment by segment.
  auto fresh = run_of(18'000'000, 1);
  const auto segments = price_interval(rates(), fresh, kStart, kStart + Millis(200'000));
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0].seconds, 101);
  EXPECT_EQ(segments[0].amount, 101 * 5000);
  EXPECT_EQ(segments[1].from, kStart + Millis(101'000));
  EXPECT_EQ(segments[1].amount, 99 * 10'000);
}

TEST_F(Metering, AcrossSegmentsAnySplitOfMetersChargesTheSame) {
  // Awkward prices, so that each segment rounds.
  auto stepwise = run_of(1'234'567, 1);
  change_at(Millis(1'000'300), {.gpu_per_hour = {{"h100-80g", 7'654'321}}});
  change_at(Millis(2'500'000), {.gpu_per_hour = {{"h100-80g", 1'111'111}}});
  auto at_once = stepwise;
  Micros stepwise_total = 0;
  for (int ms = 1300; ms <= 3'600'000; ms += 1300) {
    if (auto t = meter(stepwise, Millis(ms))) stepwise_total += t->amount;
  }
  const auto single = meter(at_once, stepwise.metered_until - kStart);
  ASSERT_TRUE(single);
  EXPECT_EQ(stepwise_total, single->amount);
  // Each segment rounds once: floor(rate x seconds / period) per segment.
  const int64_t s1 = 1001, s2 = 2500 - 1001, s3 = at_once.billed_seconds - 2500;
  EXPECT_EQ(single->amount, charge_for_seconds(1'234'567, 1000, s1) +
                                charge_for_seconds(7'654'321, 1000, s2) +
                                charge_for_seconds(1'111'111, 1000, s3));
}

TEST_F(Metering, FractionalGpusPayProRata) {
  auto usage = run_of(18'000'000, 1);
  usage.gpu_milli = 250;  // a quarter of a GPU: 1250 micros a second
  const auto transfer = meter(usage, Millis(3'600'000));
  ASSERT_TRUE(transfer);
  EXPECT_EQ(transfer->amount, 4'500'000);
}

TEST_F(Metering, CpuMemoryAndDiskAreChargedWithTheGpu) {
  auto usage = run_of(18'000'000, 1);
  change_at(Millis(0), {.cpu_per_core_hour = 36'000,  // 10 a core-second
                        .memory_per_gb_hour = 7'200,  // 2 a GB-second
                        .disk_per_gb_hour = 360});    // 0.1 a GB-second
  usage.cpu = 8;
  usage.memory_gb = 64;
  usage.disk_gb = 100;
  const auto transfer = meter(usage, Millis(10'000));
  ASSERT_TRUE(transfer);
  EXPECT_EQ(transfer->amount, 10 * (5000 + 8 * 10 + 64 * 2 + 100 / 10));
}

TEST_F(Metering, ARunShorterThanTheMinimumIsChargedTheMinimum) {
  auto usage = run_of(18'000'000, 1);
  ASSERT_TRUE(meter(usage, Millis(20'500)));
  const auto minimum = charge_minimum(rates(), usage, 60);
  ASSERT_TRUE(minimum);
  EXPECT_EQ(minimum->amount, 40 * 5000);
  EXPECT_EQ(minimum->id, "usage:i-1:1:60");
  EXPECT_EQ(usage.billed_seconds, 60);
  EXPECT_EQ(usage.charged, 60 * 5000);
  // A run that reached the minimum owes nothing more.
  EXPECT_FALSE(charge_minimum(rates(), usage, 60));
  // Nor does one that never reported a whole second, beyond the minimum itself.
  auto instant = run_of(18'000'000, 1);
  instant.run = 2;
  const auto whole = charge_minimum(rates(), instant, 60);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->amount, 60 * 5000);
}

TEST_F(Metering, SpotWorkPaysTheSpotPriceOfEachSecond) {
  auto usage = run_of(18'000'000, 1, PricingModel::kSpot);
  // Idle: the floor, 40 % (2000 a second). Full from 30.2 s: the cap, 5000 a second.
  spot_.observe("h100-80g", 0, kStart, book_);
  spot_.observe("h100-80g", 1000, kStart + Millis(30'200), book_);
  const auto transfer = meter(usage, Millis(60'000));
  ASSERT_TRUE(transfer);
  EXPECT_EQ(transfer->amount, 31 * 2000 + 29 * 5000);
  EXPECT_EQ(usage.price_per_gpu_hour, 18'000'000);
}

TEST_F(Metering, AStoppedDiskPaysStoragePerGbMonth) {
  model::UsageRecord disk;
  disk.kind = UsageKind::kStoppedDisk;
  disk.tenant_id = "t-1";
  disk.instance_id = "i-1";
  disk.run = 3;
  disk.disk_gb = 100;
  disk.started_at = disk.metered_until = kStart;
  // 0.5 a GB-month by default: 100 GB for a whole month is 50.
  const auto transfer =
      meter_usage(rates(), disk, kStart + Millis(model::kSecondsPerBillingMonth * 1000));
  ASSERT_TRUE(transfer);
  EXPECT_EQ(transfer->amount, 50'000'000);
  EXPECT_EQ(transfer->id, fmt::format("storage:i-1:3:{}", model::kSecondsPerBillingMonth));
  EXPECT_FALSE(charge_minimum(rates(), disk, 1'000'000'000));
}

TEST_F(Metering, AnEstimateBreaksTheHourDown) {
  change_at(
      Millis(0),
      {.cpu_per_core_hour = 100'000, .memory_per_gb_hour = 10'000, .disk_per_gb_hour = 1'000});
  model::InstanceSpec spec;
  spec.gpu_types = {"h100-80g"};
  spec.gpu_count = 2;
  spec.cpu = 16;
  spec.memory_gb = 128;
  spec.disk_gb = 720;
  auto e = estimate(rates(), spec, "h100-80g", kStart);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->gpu_per_hour, 36'000'000);
  EXPECT_EQ(e->cpu_per_hour, 1'600'000);
  EXPECT_EQ(e->memory_per_hour, 1'280'000);
  EXPECT_EQ(e->disk_per_hour, 720'000);
  EXPECT_EQ(e->total_per_hour, 36'000'000 + 1'600'000 + 1'280'000 + 720'000);
  EXPECT_EQ(e->stopped_storage_per_hour, 500'000);  // 720 GB x 0.5 a month of 720 h
  EXPECT_EQ(e->minimum_billed_seconds, 60);
  EXPECT_EQ(e->minimum_charge, e->total_per_hour / 60);
  EXPECT_FALSE(e->spot_floor_per_gpu_hour);
  spec.pricing = PricingModel::kSpot;
  e = estimate(rates(), spec, "h100-80g", kStart);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->spot_floor_per_gpu_hour, 7'200'000);
  EXPECT_EQ(e->spot_cap_per_gpu_hour, 18'000'000);
  EXPECT_EQ(e->gpu_price_per_gpu_hour, 7'200'000);  // never observed: idle
  EXPECT_FALSE(estimate(rates(), spec, "mystery-12g", kStart));
}

// The billing tick meters through a RateMemo (controller/metering.cc): it must charge what the
// lookups without it charge, and never serve a price from before a change.
TEST_F(Metering, AMemoNeverServesAPriceSetAfterItsLookup) {
  RateMemo memo;
  const Rates memoised{book_, spot_, &memo};
  auto usage = run_of(18'000'000, 1);  // 5000 micros a second
  auto plain = usage;
  ASSERT_EQ(meter_usage_due(memoised, usage, kStart + Millis(60'000)), 60 * 5000);
  // Set after the memo looked the price up, effective in the middle of the next interval.
  change_at(Millis(90'500), {.gpu_per_hour = {{"h100-80g", 36'000'000}}});
  EXPECT_EQ(meter_usage_due(memoised, usage, kStart + Millis(120'000)), 31 * 5000 + 29 * 10'000);
  EXPECT_EQ(usage.price_per_gpu_hour, 36'000'000);
  // Set between two ticks, effective at once.
  change_at(Millis(120'000), {.gpu_per_hour = {{"h100-80g", 18'000'000}}});
  EXPECT_EQ(meter_usage_due(memoised, usage, kStart + Millis(180'000)), 60 * 5000);
  EXPECT_EQ(meter_usage_due(rates(), plain, kStart + Millis(180'000)), usage.charged);
  EXPECT_EQ(plain.segment_seconds, usage.segment_seconds);
}

TEST_F(Metering, AMemoNeverServesASpotPriceObservedAfterItsLookup) {
  RateMemo memo;
  const Rates memoised{book_, spot_, &memo};
  auto usage = run_of(18'000'000, 1, PricingModel::kSpot);
  auto on_demand = run_of(18'000'000, 1);
  spot_.observe("h100-80g", 0, kStart, book_);  // the floor: 2000 a second
  ASSERT_EQ(meter_usage_due(memoised, usage, kStart + Millis(60'000)), 60 * 2000);
  ASSERT_EQ(meter_usage_due(memoised, on_demand, kStart + Millis(60'000)), 60 * 5000);
  // Full from 90.5 s (the cap, 5000 a second), observed after the lookups.
  spot_.observe("h100-80g", 1000, kStart + Millis(90'500), book_);
  EXPECT_EQ(meter_usage_due(memoised, usage, kStart + Millis(120'000)), 31 * 2000 + 29 * 5000);
  EXPECT_EQ(usage.price_per_gpu_hour, 18'000'000);
  EXPECT_EQ(meter_usage_due(memoised, on_demand, kStart + Millis(120'000)), 60 * 5000);
}

TEST_F(Metering, AMemoFindsWhatALookupFindsAtEveryInstant) {
  change_at(Millis(10'000), {.gpu_per_hour = {{"h100-80g", 36'000'000}}});
  change_at(Millis(20'000), {.gpu_per_hour = {{"h100-80g", std::nullopt}}});  // taken away
  change_at(Millis(30'000), {.gpu_per_hour = {{"h100-80g", 9'000'000}}});
  spot_.observe("h100-80g", 500, kStart + Millis(5'000), book_);
  spot_.observe("h100-80g", 900, kStart + Millis(25'000), book_);
  RateMemo memo;
  // Backwards and forwards, so that entries are found by their interval, not their order.
  for (const int64_t ms : {40'000, 0, 35'000, 4'999, 5'000, 9'999, 10'000, 24'999, 25'000, 19'999,
                           20'000, 29'999, 30'000, -1'000, 100'000}) {
    const Timestamp t = kStart + Millis(ms);
    for (const auto pricing :
         {PricingModel::kOnDemand, PricingModel::kSpot, PricingModel::kReserved}) {
      for (const std::string_view type : {"h100-80g", "a100-80g", "mystery-12g"}) {
        const PricesInForce looked_up = prices_in_force(book_, spot_, type, pricing, t);
        const PricesInForce found = memo.find(book_, spot_, type, pricing, t);
        SCOPED_TRACE(fmt::format("{} ms, pricing {}, {}", ms, static_cast<int>(pricing), type));
        EXPECT_EQ(found.prices, looked_up.prices);
        EXPECT_EQ(found.gpu_per_hour, looked_up.gpu_per_hour);
        EXPECT_LE(found.from, t);
        EXPECT_GT(found.until, t);
        EXPECT_EQ(found.gpu_per_hour, gpu_price(rates(), type, pricing, t).value_or(0));
      }
    }
  }
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

TEST(Ledger, AUsageChargePostedFromTheRecordIsTheTransferUsageTransferBuilds) {
  // Two ledgers, one posting built transfers and one posting records, past the ends of their
  // storage chunks (65,536 transfers, 1 MiB of text): they must read back the same.
  Ledger built;
  Ledger packed;
  model::UsageRecord run;
  run.tenant_id = "t-a-tenant-with-a-long-id";
  run.instance_id = "i-an-instance-with-a-long-id";
  run.run = 4;
  model::UsageRecord disk = run;
  disk.kind = UsageKind::kStoppedDisk;
  const Ledger::TenantNames names = packed.tenant_names(run.tenant_id);
  EXPECT_EQ(packed.tenant_names(run.tenant_id).cash, names.cash);  // interned once
  constexpr int kCharges = 70'000;
  for (int i = 1; i <= kCharges; ++i) {
    model::UsageRecord& usage = i % 7 == 0 ? disk : run;
    usage.billed_seconds += 60;
    usage.metered_until = kStart + Millis(int64_t{i} * 60'000);
    const Micros due = 1'000 + i;
    ASSERT_TRUE(built.post(usage_transfer(usage, due)));
    ASSERT_TRUE(packed.post_usage(usage, due, names));
  }
  EXPECT_FALSE(packed.post_usage(run, 0, names));
  const auto a = built.transfers_of(run.tenant_id);
  const auto b = packed.transfers_of(run.tenant_id);
  ASSERT_EQ(a.size(), static_cast<size_t>(kCharges));
  ASSERT_EQ(b.size(), a.size());
  EXPECT_EQ(b.back().id,
            "storage:i-an-instance-with-a-long-id:4:600000");  // the 10,000th disk charge
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(b[i].id, a[i].id) << i;
    ASSERT_EQ(b[i].at, a[i].at) << i;
    ASSERT_EQ(b[i].from_account, a[i].from_account) << i;
    ASSERT_EQ(b[i].to_account, a[i].to_account) << i;
    ASSERT_EQ(b[i].amount, a[i].amount) << i;
    ASSERT_EQ(b[i].kind, a[i].kind) << i;
    ASSERT_EQ(b[i].tenant_id, a[i].tenant_id) << i;
    ASSERT_EQ(b[i].reference, a[i].reference) << i;
  }
  EXPECT_EQ(packed.balance("platform:revenue"), built.balance("platform:revenue"));
  EXPECT_EQ(packed.balance(model::tenant_cash_account(run.tenant_id)),
            built.balance(model::tenant_cash_account(run.tenant_id)));
  EXPECT_EQ(packed.total(), 0);
}

}  // namespace
}  // namespace gpurent::billing
