// The versioned price book: what the platform charges, as operators set it over time.
//
// Contract:
// - The book always holds at least one version. Version 1 is the GPU catalog's default prices in
//   the platform currency, effective from the epoch, so a platform whose operators never set a
//   price bills exactly as the catalog says.
// - at(t) is the version in force at t: the one with the latest effective_at <= t (of two with the
//   same effective_at, the later set). Versions are kept forever (they are few and small): any past
//   interval can be priced again, which is what makes metering exact across price changes.
// - set() never rewrites the past: effective_at must not be before `now`. A change is partial: the
//   prices it names replace those of the version in force at its effective time, the rest are
//   carried over (a GPU price of nullopt removes the type's price: it can no longer be rented).
//   A version that takes effect later than another already set is not changed by it.
// - Validation (errors as values, kUnprocessable with a stable code): invalid_field (a negative
//   price, a floor outside 0..1000 per mille, a reserved term outside 1..kMaxReservedTermDays days
//   or its discount outside 0..999 per mille, a minimum outside 0..kMaxMinimumBilledSeconds),
//   unknown_gpu_type (the caller says which types exist), effective_at_in_past, currency_fixed
//   (the ledger holds one currency: a version may not change it).
// Not thread-safe; owned by the controller.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "common/result.h"
#include "model/price_book.h"

namespace gpurent::billing {

inline constexpr int64_t kMaxMinimumBilledSeconds = 24 * 3600;
// The longest reservation (controller/jobs.cc) is 366 days; no term can be longer.
inline constexpr int kMaxReservedTermDays = 366;
// Far above any real price per unit-hour (10^6 units of the currency), and small enough that no
// rate times any quantity overflows (see money.h).
inline constexpr Micros kMaxPrice = 1'000'000 * kMicrosPerUnit;

// An operator's change: the fields it sets; absent ones keep the price in force.
struct PriceChange {
  std::optional<Timestamp> effective_at;  // absent: now
  std::optional<std::string> currency;
  // Per type: a new price per GPU-hour, or nullopt to take the type's price away.
  std::map<std::string, std::optional<Micros>, std::less<>> gpu_per_hour;
  std::optional<Micros> cpu_per_core_hour;
  std::optional<Micros> memory_per_gb_hour;
  std::optional<Micros> disk_per_gb_hour;
  std::optional<Micros> storage_per_gb_month;
  std::optional<Micros> egress_per_gb;
  std::optional<int64_t> minimum_billed_seconds;
  std::optional<int> spot_floor_permille;
  // Replaces the whole table of reserved-term discounts (term days -> per mille).
  std::optional<std::map<int, int>> reserved_discount_permille;
};

class PriceBook {
 public:
  explicit PriceBook(std::string currency);

  // Replaces the versions with those read back from the store (in version order); none: keeps
  // version 1.
  Status restore(std::vector<model::PriceVersion> versions);
  // Adds a version made of `change` merged onto the version in force at its effective time.
  // `known_type` says whether a GPU type exists (the catalog's, or one a node reported).
  Result<model::PriceVersion> set(const PriceChange& change, Timestamp now,
                                  const std::function<bool(std::string_view)>& known_type);

  const model::PriceVersion& at(Timestamp t) const;
  // Versions that take effect after `now`, earliest first.
  std::vector<const model::PriceVersion*> upcoming(Timestamp now) const;
  // All versions, in the order they were set.
  const std::vector<model::PriceVersion>& history() const { return versions_; }
  // When the version in force at t stops being in force: the effective_at of the first version
  // that takes effect after t, or Timestamp::max() when none does.
  Timestamp next_change(Timestamp t) const;
  // Grows with every change to the versions (set, restore): what was looked up in the book under
  // another revision may be stale (billing::RateMemo).
  uint64_t revision() const { return revision_; }

  const std::string& currency() const { return versions_.front().currency; }
  // The on-demand price per GPU-hour of a type at t, or nullopt where it has none.
  std::optional<Micros> on_demand_price(std::string_view gpu_type, Timestamp t) const;

 private:
  // The index in order_ of the first version effective after t.
  size_t first_after(Timestamp t) const;
  void reindex();

  std::vector<model::PriceVersion> versions_;  // in version order
  std::vector<size_t> order_;                  // indexes into versions_ by (effective_at, version)
  uint64_t revision_ = 0;
};

}  // namespace gpurent::billing
