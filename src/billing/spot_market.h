// The spot market: per GPU type a price that follows the type's utilisation.
//
// Formula (integer arithmetic, rounded toward zero), for a type with on-demand price P and the
// price book's floor fraction f (spot_floor_permille / 1000), at utilisation u in [0, 1]
// (utilisation_permille / 1000 = GPUs held / GPUs on ready nodes, clamped to 1):
//     floor = P * f            cap = P
//     spot  = floor + (cap - floor) * u^2
// An idle type costs the floor (40 % of on-demand by default: the fixed spot price before the
// market existed); the price climbs slowly while there is room and steeply as the type fills, and
// reaches on-demand when every GPU is held. A type without an on-demand price has no spot price.
//
// Contract:
// - The controller observes every type's utilisation on every tick; a point is recorded only when
//   the utilisation changed. The price at t is always spot_price(book.at(t), utilisation_at(t)):
//   a price-book change moves the spot price at its own effective time, so billing splits an
//   interval at both kinds of change and nothing depends on when a tick ran.
// - History is bounded: at most kMaxSpotPointsPerType points per type are kept (the oldest go
//   first). The points are persisted (the store keeps the same bound), so a restart does not
//   change what a past interval costs. Before a type's first kept point the type counts as idle
//   (the floor): a type never observed is, and metering never reaches that far back (it runs
//   every billing interval, and the bound covers hours of changes at one a second).
// Not thread-safe; owned by the controller.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "billing/price_book.h"
#include "common/clock.h"
#include "common/money.h"
#include "model/price_book.h"

namespace gpurent::billing {

inline constexpr size_t kMaxSpotPointsPerType = 10'000;

// The formula above; utilisation_permille is clamped to 0..1000.
Micros spot_price(Micros on_demand, int floor_permille, int utilisation_permille);

class SpotMarket {
 public:
  // Puts back persisted points (any order).
  void restore(std::vector<model::SpotPricePoint> points);
  // Records the type's utilisation from t on, if it differs from the last recorded; returns the
  // new point (to persist), whose price is the one in force at t under `book`.
  std::optional<model::SpotPricePoint> observe(std::string_view gpu_type, int utilisation_permille,
                                               Timestamp t, const PriceBook& book);

  // A type's utilisation at some t, and the interval around t it holds over: [from, until),
  // from Timestamp::min() before the first kept point, until Timestamp::max() after the last.
  struct Span {
    int utilisation_permille = 0;
    Timestamp from = Timestamp::min();
    Timestamp until = Timestamp::max();
  };
  Span span_at(std::string_view gpu_type, Timestamp t) const;
  int utilisation_at(std::string_view gpu_type, Timestamp t) const {
    return span_at(gpu_type, t).utilisation_permille;
  }
  // The spot price per GPU-hour at t, or nullopt for a type without an on-demand price.
  std::optional<Micros> price_at(const PriceBook& book, std::string_view gpu_type,
                                 Timestamp t) const;
  // Grows with every change to the points (observe, restore): what was looked up in the market
  // under another revision may be stale (billing::RateMemo).
  uint64_t revision() const { return revision_; }
  // The kept points of a type in [from, to), oldest first; with the point in force at `from`
  // first, so that the price over the whole window is known.
  std::vector<model::SpotPricePoint> history(std::string_view gpu_type, Timestamp from,
                                             Timestamp to) const;
  // The types with recorded points.
  std::vector<std::string> types() const;

 private:
  std::map<std::string, std::deque<model::SpotPricePoint>, std::less<>> points_;
  uint64_t revision_ = 0;
};

}  // namespace gpurent::billing
