#include "controller/pricing.h"

#include <gtest/gtest.h>

#include "model/gpu_catalog.h"

namespace gpurent::controller {
namespace {

// The catalog's default on-demand prices per GPU-hour (model/gpu_catalog.cc), and the default
// spot floor (40 % of on-demand).
constexpr Micros kH100 = 18'000'000;
constexpr Micros kH200 = 25'200'000;
constexpr Micros kA100 = 10'800'000;
constexpr Micros kH100Floor = kH100 * 400 / 1000;

const model::Principal kOperator{"", "key-op", model::Role::kOperator};
const model::Principal kTenant{"t-1", "key-t", model::Role::kTenantAdmin};

bool catalog_type(std::string_view type) { return model::find_gpu_type(type) != nullptr; }

model::InstanceSpec request(std::vector<std::string> gpu_types,
                            model::PricingModel pricing = model::PricingModel::kOnDemand) {
  model::InstanceSpec spec;
  spec.gpu_types = std::move(gpu_types);
  spec.pricing = pricing;
  return spec;
}

class PricingTest : public ::testing::Test {
 protected:
  ManualClock clock_{Timestamp(Millis(1'800'000'000'000))};
  ChangeSet changes_;
  std::string currency_ = "CNY";
  Pricing pricing_{{clock_, changes_, currency_}};
};

TEST_F(PricingTest, OnlyOperatorsSetPricesAndTheFirstChangeAlsoWritesVersionOne) {
  billing::PriceChange change;
  change.gpu_per_hour["h100-80g"] = 20'000'000;

  const auto refused = pricing_.set(kTenant, change, catalog_type);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kPermissionDenied);
  EXPECT_TRUE(changes_.price_versions.empty());

  const auto second = pricing_.set(kOperator, change, catalog_type);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->version, 2);
  ASSERT_EQ(changes_.price_versions.size(), 2u);
  EXPECT_EQ(changes_.price_versions[0].version, 1);
  EXPECT_EQ(changes_.price_versions[1].version, 2);
  EXPECT_EQ(pricing_.book().on_demand_price("h100-80g", clock_.now()), 20'000'000);

  change.gpu_per_hour["h100-80g"] = 21'000'000;
  ASSERT_TRUE(pricing_.set(kOperator, change, catalog_type));
  ASSERT_EQ(changes_.price_versions.size(), 3u);  // version 1 is written once
  EXPECT_EQ(changes_.price_versions[2].version, 3);
}

TEST_F(PricingTest, ARequestIsJudgedAtTheDearestTypeItAccepts) {
  const auto listed = pricing_.dearest_type(request({"a100-80g", "h100-80g"}));
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->gpu_type, "h100-80g");
  EXPECT_EQ(listed->per_gpu_hour, kH100);

  // No list: every catalog type with enough memory; the H200 is the only one above 100 GB.
  model::InstanceSpec by_memory;
  by_memory.min_gpu_memory_gb = 100;
  const auto large = pricing_.dearest_type(by_memory);
  ASSERT_TRUE(large);
  EXPECT_EQ(large->gpu_type, "h200-141g");
  EXPECT_EQ(large->per_gpu_hour, kH200);

  // Spot work is judged at the spot price: the floor while the type is idle.
  const auto spot = pricing_.dearest_type(request({"h100-80g"}, model::PricingModel::kSpot));
  ASSERT_TRUE(spot);
  EXPECT_EQ(spot->per_gpu_hour, kH100Floor);

  EXPECT_FALSE(pricing_.dearest_type(request({"no-such-gpu"})));

  const auto estimate = pricing_.estimate(request({"a100-80g"}));
  ASSERT_TRUE(estimate) << estimate.error().message;
  EXPECT_EQ(estimate->gpu_type, "a100-80g");
}

TEST_F(PricingTest, UtilisationMovesTheSpotPriceAndATypeWithNoCapacityLeftFallsIdle) {
  const MilliGpusByType capacity{{"h100-80g", 8'000}};
  EXPECT_TRUE(pricing_.observe_utilisation(capacity, {{"h100-80g", 4'000}}));
  ASSERT_EQ(changes_.spot_prices.size(), 1u);
  // Half held: floor + (cap - floor) * 0.5^2.
  EXPECT_EQ(pricing_.spot_price("h100-80g"), kH100Floor + (kH100 - kH100Floor) / 4);

  clock_.advance(Millis(1'000));
  EXPECT_FALSE(pricing_.observe_utilisation(capacity, {{"h100-80g", 4'000}}));  // unchanged
  EXPECT_EQ(changes_.spot_prices.size(), 1u);

  // Held beyond capacity (work on a node that went down): full, at on-demand.
  clock_.advance(Millis(1'000));
  EXPECT_TRUE(pricing_.observe_utilisation(capacity, {{"h100-80g", 9'000}}));
  EXPECT_EQ(pricing_.spot_price("h100-80g"), kH100);

  clock_.advance(Millis(1'000));
  EXPECT_TRUE(pricing_.observe_utilisation({}, {{"h100-80g", 9'000}}));
  EXPECT_EQ(pricing_.spot_price("h100-80g"), kH100Floor);
  EXPECT_EQ(changes_.spot_prices.size(), 3u);
}

TEST_F(PricingTest, AMaxPriceAdmitsSpotWorkWhileSomeAcceptedTypeIsWithinIt) {
  auto spot = request({"h100-80g", "a100-80g"}, model::PricingModel::kSpot);
  spot.max_price = kH100Floor;
  EXPECT_TRUE(pricing_.within_max_price(spot));

  // The H100s fill up: the A100s' floor is still within the max price.
  ASSERT_TRUE(pricing_.observe_utilisation({{"h100-80g", 8'000}, {"a100-80g", 8'000}},
                                           {{"h100-80g", 8'000}}));
  EXPECT_TRUE(pricing_.within_max_price(spot));

  clock_.advance(Millis(1'000));
  ASSERT_TRUE(pricing_.observe_utilisation({{"h100-80g", 8'000}, {"a100-80g", 8'000}},
                                           {{"h100-80g", 8'000}, {"a100-80g", 8'000}}));
  EXPECT_EQ(pricing_.spot_price("a100-80g"), kA100);
  EXPECT_FALSE(pricing_.within_max_price(spot));

  // On-demand work, or spot work without a max price, is never held back by it.
  auto on_demand = request({"h100-80g"});
  on_demand.max_price = 1;
  EXPECT_TRUE(pricing_.within_max_price(on_demand));
  EXPECT_TRUE(pricing_.within_max_price(request({"h100-80g"}, model::PricingModel::kSpot)));
}

TEST_F(PricingTest, VersionsAndSpotPointsComeBackFromTheSnapshot) {
  billing::PriceChange change;
  change.gpu_per_hour["h100-80g"] = 20'000'000;
  ASSERT_TRUE(pricing_.set(kOperator, change, catalog_type));
  ASSERT_TRUE(pricing_.observe_utilisation({{"h100-80g", 8'000}}, {{"h100-80g", 2'000}}));
  const auto spot_before = pricing_.spot_price("h100-80g");

  Snapshot snapshot;
  snapshot.price_versions = changes_.price_versions;
  snapshot.spot_prices = changes_.spot_prices;
  ChangeSet restored_changes;
  Pricing restored{{clock_, restored_changes, currency_}};
  ASSERT_TRUE(restored.restore(snapshot));
  EXPECT_EQ(restored.book().history().size(), 2u);
  EXPECT_EQ(restored.book().on_demand_price("h100-80g", clock_.now()), 20'000'000);
  EXPECT_EQ(restored.spot_price("h100-80g"), spot_before);
  EXPECT_TRUE(restored_changes.price_versions.empty());  // restoring writes nothing
}

}  // namespace
}  // namespace gpurent::controller
