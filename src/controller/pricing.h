// Pricing: the operators' price book (its versions, billing/price_book.h), the spot market
// (billing/spot_market.h), and the price lookups the controller's commands make on them.
//
// Invariants: a new price-book version and every moved spot price are in the pending ChangeSet,
// durable with the command or tick that made them; version 1 (the catalog's defaults) is written
// once a second version exists, so that a later release with other defaults cannot reprice the
// past.
//
// Part of the Controller (controller.h), which decides when prices change: an operator's
// set_prices, and the tick's utilisation of each type (it knows the nodes and what is held).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "billing/billing.h"
#include "billing/price_book.h"
#include "billing/spot_market.h"
#include "common/clock.h"
#include "common/result.h"
#include "controller/change_set.h"
#include "model/instance.h"
#include "model/tenant.h"

namespace gpurent::controller {

// GPUs of each type, in thousandths of a GPU (model::kMilliPerGpu).
using MilliGpusByType = std::map<std::string, int64_t, std::less<>>;

class Pricing {
 public:
  struct Context {
    const Clock& clock;
    ChangeSet& changes;
    const std::string& currency;
  };
  explicit Pricing(Context context) : c_(context), book_(context.currency) {}
  Pricing(const Pricing&) = delete;
  Pricing& operator=(const Pricing&) = delete;

  // The versions and spot points from the store's snapshot.
  Status restore(Snapshot& snapshot);

  const billing::PriceBook& book() const { return book_; }
  const billing::SpotMarket& spot_market() const { return spot_; }
  billing::Rates rates() const { return {book_, spot_}; }
  // rates() with a memo of the price intervals looked up: the billing tick prices the same few
  // types for every run it meters.
  billing::Rates metering_rates() { return {book_, spot_, &memo_}; }

  // Operators: a new price-book version (billing::PriceBook::set says what is refused).
  // `known_type` says whether a GPU type exists (the catalog's, or one a node reported).
  Result<model::PriceVersion> set(const model::Principal& caller,
                                  const billing::PriceChange& change,
                                  const std::function<bool(std::string_view)>& known_type);

  // Of the GPU types a request accepts (its gpu_types, or else every catalog type with its
  // min_gpu_memory_gb), the one that costs most now under its pricing model, with that price:
  // until it is placed, a request is judged at the dearest type it may get. nullopt when none of
  // them has a price.
  struct PricedType {
    Micros per_gpu_hour = 0;
    std::string gpu_type;
  };
  std::optional<PricedType> dearest_type(const model::InstanceSpec& spec) const;
  // The hourly price of a launch request, broken down, on its dearest type (the requested type
  // when none has a price): what a launch is checked for funds at. 400/422 for a request that is
  // not valid (as a launch would be refused).
  Result<billing::Estimate> estimate(const model::InstanceSpec& spec) const;
  // The spot price of a type now; nullopt for an unpriced type.
  std::optional<Micros> spot_price(std::string_view gpu_type) const;
  // False for spot work with a max_price below the spot price of every type it accepts.
  bool within_max_price(const model::InstanceSpec& spec) const;

  // Observes each type's utilisation now: `held` of `capacity` (types with no capacity are idle,
  // and a type that had some before and has none now is idle from now on). True if a spot price
  // moved.
  bool observe_utilisation(const MilliGpusByType& capacity, const MilliGpusByType& held);

  // The controller's clock: the time at which reads of the prices in force are made.
  Timestamp now() const { return c_.clock.now(); }

 private:
  Context c_;
  billing::PriceBook book_;
  billing::SpotMarket spot_;
  billing::RateMemo memo_;
};

}  // namespace gpurent::controller
