// The operators' price book: versions of prices, each in force from its effective time until the
// next version's, and the spot market's price points.
//
// A version is whole (every price it holds applies from effective_at); an operator's partial
// change is merged onto the version in force before it is stored (billing/price_book.h). Versions
// are numbered 1, 2, ... in the order they were set, and their effective times never go backwards
// relative to the time they were set: a change is never retroactive. Version 1 holds the GPU
// catalog's default prices and takes effect at the epoch, so a platform that never set a price
// bills as it always did.
//
// All money is integer micro-units of `currency`.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/clock.h"
#include "common/json.h"
#include "common/money.h"

namespace gpurent::model {

inline constexpr int64_t kDefaultMinimumBilledSeconds = 60;
// The spot price never falls below this share of on-demand (per mille: 400 = 40 %).
inline constexpr int kDefaultSpotFloorPermille = 400;
inline constexpr int kPermille = 1000;
// Persistent volumes and stopped instances' disks, per GB and billing month: 0.5 a GB-month.
inline constexpr Micros kDefaultStoragePricePerGbMonth = 500'000;
// Reserved terms' discounts off on-demand, per mille, by the shortest term (in days) that earns
// them: a commitment of 30 to 89 days gets 20 % off (docs/billing.md "Reserved terms").
inline const std::map<int, int> kDefaultReservedDiscountPermille{{7, 100}, {30, 200}, {90, 350}};

struct PriceVersion {
  int64_t version = 0;       // 1, 2, ... in the order they were set
  Timestamp effective_at{};  // in force from here until the next version's effective_at
  Timestamp set_at{};        // when an operator set it; never after effective_at
  std::string currency = "CNY";
  std::map<std::string, Micros, std::less<>> gpu_per_hour;  // on-demand, per GPU-hour, by type
  Micros cpu_per_core_hour = 0;
  Micros memory_per_gb_hour = 0;
  Micros disk_per_gb_hour = 0;  // an instance's disk_gb while it runs
  // Stopped instances' disks and volumes, per GB and billing month (kSecondsPerBillingMonth).
  Micros storage_per_gb_month = kDefaultStoragePricePerGbMonth;
  Micros egress_per_gb = 0;
  int64_t minimum_billed_seconds = kDefaultMinimumBilledSeconds;  // per start of a run
  int spot_floor_permille = kDefaultSpotFloorPermille;            // 0..1000
  // Term length in days -> discount per mille for a reservation at least that long.
  std::map<int, int> reserved_discount_permille = kDefaultReservedDiscountPermille;
};

// One price of the spot market: `price` per GPU-hour of `gpu_type` from `at` until the type's next
// point. `utilisation_permille` is what it was computed from.
struct SpotPricePoint {
  std::string gpu_type;
  Timestamp at{};
  Micros price = 0;
  int utilisation_permille = 0;
};

void to_json(Json& j, const PriceVersion& v);
void from_json(const Json& j, PriceVersion& v);
void to_json(Json& j, const SpotPricePoint& v);
void from_json(const Json& j, SpotPricePoint& v);
// Discounts by term as a JSON object keyed by the days as text ({"7": 100, ...}).
Json discounts_json(const std::map<int, int>& discounts);

}  // namespace gpurent::model
