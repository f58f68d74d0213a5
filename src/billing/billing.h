// Billing for the foundation: the price book, per-second metering of runs, and the double-entry
// ledger of balances.
//
// Contract:
// - A run's charge is always charge_for_seconds(price, gpus, billed_seconds): metering in many
//   small steps gives exactly the same total as one big step (one rounding per line item, toward
//   zero, so the tenant is never charged for a fraction of a micro-unit).
// - Every movement of money is a Transfer with a positive amount between two different accounts;
//   the sum of all balances is therefore always zero.
// - Transfer ids are deterministic: "usage:<instance>:<run>:<billed seconds>" for metering a run,
//   "volume:<volume>:<billed seconds>" for a volume's storage, so a replayed meter produces the
//   same id and the store refuses it.
// - A volume's charge is always charge_pro_rata(price per GB-month, size_gb, billed_seconds,
//   model::kSecondsPerBillingMonth): a month is 30 days, whatever the calendar says.
// Not thread-safe; owned by the controller.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "common/result.h"
#include "model/instance.h"
#include "model/ledger.h"
#include "model/volume.h"

namespace gpurent::billing {

inline constexpr Micros kSpotPricePercent = 40;
// Persistent volumes, per GB and billing month (model::kSecondsPerBillingMonth): 0.5 a GB-month.
inline constexpr Micros kDefaultStoragePricePerGbMonth = 500'000;

class PriceBook {
 public:
  // Starts from the catalog's default on-demand prices.
  explicit PriceBook(std::string currency);
  const std::string& currency() const { return currency_; }
  // Per GPU-hour, or nullopt for a type without a price (it cannot be rented).
  std::optional<Micros> on_demand_price(std::string_view gpu_type) const;
  // Per GPU-hour under a pricing model. Spot is a fixed share of on-demand (preemptible, so
  // cheaper); reserved capacity is charged at on-demand rates until reservations are billed.
  std::optional<Micros> price(std::string_view gpu_type, model::PricingModel pricing) const;
  // Per GB of a volume's size and billing month.
  Micros storage_price_per_gb_month() const { return storage_per_gb_month_; }

 private:
  std::string currency_;
  Micros storage_per_gb_month_ = kDefaultStoragePricePerGbMonth;
  std::map<std::string, Micros, std::less<>> on_demand_;
};

// Charges a run for the whole seconds in [metered_until, until). Returns the transfer to post, or
// nullopt when nothing is due (less than a second, or a zero price). Updates the record.
std::optional<model::Transfer> meter_run(model::UsageRecord& usage, Timestamp until);
// Charges a volume for the whole seconds in [metered_until, until), likewise.
std::optional<model::Transfer> meter_volume(model::Volume& volume, Timestamp until);

class Ledger {
 public:
  // Posts a transfer; refuses a non-positive amount or identical accounts (a bug in the caller).
  Status post(const model::Transfer& transfer);
  Micros balance(std::string_view account) const;
  // Sum over all accounts; zero unless the ledger is corrupt.
  Micros total() const;
  const std::vector<model::Transfer>& transfers_of(std::string_view tenant_id) const;

 private:
  std::unordered_map<std::string, Micros> balances_;
  std::unordered_map<std::string, std::vector<model::Transfer>> by_tenant_;
};

}  // namespace gpurent::billing
