// Billing: per-second metering of runs and stopped disks across price changes, estimates, and the
// double-entry ledger of balances. Prices come from the versioned price book
// (billing/price_book.h) and, for spot work, the spot market (billing/spot_market.h).
//
// Contract:
// - Rate. A usage record costs, at each instant t, a rate in micros per rate_period(record)
//   quantity-seconds, set by the prices in force at t:
//     a run:           (gpu price(t) x gpu_count x gpu_milli + cpu price(t) x cpu x 1000
//                       + memory price(t) x memory_gb x 1000 + disk price(t) x disk_gb x 1000)
//                      per 3600 x 1000 (prices per hour; the GPU part pro rata for a share of a
//                      GPU, gpu_milli < 1000). The GPU price is the book's on-demand price, for
//                      spot work the spot market's, and zero for reserved work: its GPUs are a
//                      reserved term, paid for as such (billing/reserved.h).
//     a stopped disk:  storage price(t) x disk_gb per kSecondsPerBillingMonth.
//   A type whose GPU price is taken away runs on at no GPU charge (new work cannot start on it).
// - Seconds. Metering charges the whole seconds of [metered_until, until), each second at the
//   rate in force at its start; the sub-second remainder waits for the next meter.
// - Rounding. A record's seconds fall into segments: maximal runs of consecutive billed seconds at
//   one rate (a price-book version or a spot price change starts a new one when it changes the
//   rate). Each segment is one line item, charged charge_pro_rata(rate, 1, seconds, period) —
//   one rounding, toward zero. Hence:
//     * within a segment, many small meters charge exactly what one big meter would;
//     * across segments too, since segments are fixed by the change times and the record's second
//       grid, not by when meters run: any split of [a, b) into meters charges the same total, the
//       sum over its segments of floor(rate x seconds / period), which is below the exact value by
//       less than one micro-unit per segment.
// - Minimum duration. A run that ends having been billed fewer seconds than the
//   minimum_billed_seconds of the version in force at its start is charged the missing seconds at
//   its last rate, as if it had run on (billed_seconds then counts them). The controller does not
//   apply it to runs the platform cut short (node failure, preemption, a drain), and draws the
//   missing seconds from the tenant's packages of the run's type first, as it does run seconds
//   (billing/packages.h); charge_minimum then charges only what they left.
// - Transfers. Every movement of money is a Transfer with a positive amount between two different
//   accounts; the sum of all balances is therefore always zero. Ids are deterministic:
//   "usage:<instance>:<run>:<billed seconds>" for a run, "storage:<instance>:<run>:<billed
//   seconds>" for a stopped disk, "volume:<volume>:<billed seconds>" for a volume; billed seconds
//   only grow, so a replayed meter produces the same id and the store refuses it.
// - A volume's charge is always charge_pro_rata(price per GB-month, size_gb, billed_seconds,
//   model::kSecondsPerBillingMonth), its price locked at creation: a month is 30 days.
// Not thread-safe; owned by the controller.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "billing/price_book.h"
#include "billing/spot_market.h"
#include "common/clock.h"
#include "common/money.h"
#include "common/result.h"
#include "model/instance.h"
#include "model/ledger.h"
#include "model/volume.h"

namespace gpurent::billing {

// A run's rate is per hour and per thousandth of a unit (milli-GPUs; cores, GB x 1000).
inline constexpr int64_t kRunRatePeriod = int64_t{3600} * 1000;

// What a record's rate depends on over an interval of time: the price-book version in force and
// the GPU price per GPU-hour (on-demand, spot, or 0: reserved work, a stopped disk, an unpriced
// type). Neither changes in [from, until); a price-book version or a spot point starts a new one.
struct PricesInForce {
  const model::PriceVersion* prices = nullptr;
  Micros gpu_per_hour = 0;
  Timestamp from = Timestamp::min();
  Timestamp until = Timestamp::max();
};

// Remembers the PricesInForce it found, per GPU type and pricing model, so that the billing tick
// over 100,000 running workloads of a few types looks prices up a few times rather than twice per
// workload (bench/RESULTS.md, "Billing: one metering tick"). Never stale: it forgets everything
// once the book's or the market's revision() moved since, so a price set or a spot point observed
// between two lookups is always seen. Not thread-safe: one per controller.
class RateMemo {
 public:
  PricesInForce find(const PriceBook& book, const SpotMarket& spot, std::string_view gpu_type,
                     model::PricingModel pricing, Timestamp t);

 private:
  struct Entry {
    std::string gpu_type;
    model::PricingModel pricing;
    PricesInForce in_force;
  };
  // A tick meets a few (types x pricing models x price changes in its interval): more means the
  // entries are old, as a price change every tick leaves them behind.
  static constexpr size_t kMostEntries = 64;
  std::vector<Entry> entries_;
  uint64_t book_revision_ = 0;
  uint64_t spot_revision_ = 0;
};

// Where prices come from; with a memo, lookups go through it (the billing tick's).
struct Rates {
  const PriceBook& book;
  const SpotMarket& spot;
  RateMemo* memo = nullptr;
};

// What the rate of a record of `gpu_type` under `pricing` depends on at t (the GPU price is 0 for
// reserved work, and for an unpriced type).
PricesInForce prices_in_force(const PriceBook& book, const SpotMarket& spot,
                              std::string_view gpu_type, model::PricingModel pricing, Timestamp t);

// The price per GPU-hour of a type under a pricing model at t; nullopt for an unpriced type.
std::optional<Micros> gpu_price(const Rates& rates, std::string_view gpu_type,
                                model::PricingModel pricing, Timestamp t);
// The record's rate at t, in micros per rate_period(usage) quantity-seconds.
Micros rate_at(const Rates& rates, const model::UsageRecord& usage, Timestamp t);
int64_t rate_period(const model::UsageRecord& usage);
// A record of the shape a spec would run with on `gpu_type` (for estimates and checks).
model::UsageRecord usage_shape(const model::InstanceSpec& spec, std::string_view gpu_type);

// One segment of a priced interval: `seconds` whole seconds from `from` at one rate.
struct PricedSegment {
  Timestamp from{};
  int64_t seconds = 0;
  Micros rate = 0;          // per rate_period(usage)
  Micros gpu_per_hour = 0;  // the GPU price per GPU-hour in it (0 for a stopped disk)
  Micros amount = 0;        // charge_pro_rata(rate, 1, seconds, period)
};
// What the whole seconds of [from, to) of a record cost, segment by segment, as if they were the
// record's only seconds (a quote: the record is not changed and what it was charged is not
// consulted). Metering [from, to) of a fresh record charges exactly the sum of the amounts. This
// is how the accounts side prices the part of a run that packages do not cover.
std::vector<PricedSegment> price_interval(const Rates& rates, const model::UsageRecord& usage,
                                          Timestamp from, Timestamp to);

// Charges a record (a run or a stopped disk) for the whole seconds in [metered_until, until).
// Returns the transfer to post, or nullopt when nothing is due. Updates the record.
std::optional<model::Transfer> meter_usage(const Rates& rates, model::UsageRecord& usage,
                                           Timestamp until);
// Charges a run that ends now for the seconds missing to `minimum_seconds`, if any.
std::optional<model::Transfer> charge_minimum(const Rates& rates, model::UsageRecord& usage,
                                              int64_t minimum_seconds);
// The same two as the amount newly due (0: nothing), for a caller that posts it without building
// the transfer (Ledger::post_usage); the transfer they stand for is usage_transfer(usage, due).
Micros meter_usage_due(const Rates& rates, model::UsageRecord& usage, Timestamp until);
Micros charge_minimum_due(const Rates& rates, model::UsageRecord& usage, int64_t minimum_seconds);
// The transfer charging `due` (> 0) to a record as it is now: "usage:..." or "storage:..." (the
// contract above) at its metered_until, from its tenant's cash account to platform revenue,
// referencing its instance.
model::Transfer usage_transfer(const model::UsageRecord& usage, Micros due);
// Charges a volume for the whole seconds in [metered_until, until), likewise.
std::optional<model::Transfer> meter_volume(model::Volume& volume, Timestamp until);

// The hourly price of a launch request on one GPU type, broken down.
struct Estimate {
  std::string gpu_type;
  model::PricingModel pricing = model::PricingModel::kOnDemand;
  Micros gpu_price_per_gpu_hour = 0;  // now (spot: the current spot price)
  Micros gpu_per_hour = 0;            // for the request: x gpu_count x gpu_milli / 1000
  Micros cpu_per_hour = 0;
  Micros memory_per_hour = 0;
  Micros disk_per_hour = 0;
  Micros total_per_hour = 0;            // what an hour of running is charged (one rounding)
  Micros stopped_storage_per_hour = 0;  // the disk while the instance is stopped
  int64_t minimum_billed_seconds = 0;
  Micros minimum_charge = 0;  // what the shortest run is charged
  // Spot: the range the price per GPU-hour moves in (floor..cap) and where it is now.
  std::optional<Micros> spot_floor_per_gpu_hour;
  std::optional<Micros> spot_cap_per_gpu_hour;
};
// kUnprocessable "gpu_type_not_priced" for a type without a price.
Result<Estimate> estimate(const Rates& rates, const model::InstanceSpec& spec,
                          std::string_view gpu_type, Timestamp now);

// The balances and the transfers of every tenant, in memory. Transfers are kept packed: account
// and tenant names are interned to integers once, ids and references are appended to chunks of
// characters, so a post makes no allocation of its own (beyond a new chunk now and then) and
// hashes each name once — post_usage() none — as the ledger is posted to once per running workload
// per billing tick (bench/RESULTS.md, "Ledger transfers per second", "Billing: one metering tick").
// Not copyable: transfers point into the ledger's own chunks.
class Ledger {
 public:
  Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;
  Ledger(Ledger&&) = default;
  Ledger& operator=(Ledger&&) = default;
  // Posts a transfer; refuses a non-positive amount or identical accounts (a bug in the caller).
  Status post(const model::Transfer& transfer);
  // A tenant's names as the ledger knows them (interned on first use, then fixed for the ledger's
  // life), for post_usage: a caller that charges the same tenant often keeps them.
  struct TenantNames {
    uint32_t cash = 0;    // tenant_cash_account(tenant id)
    uint32_t tenant = 0;  // the tenant id
  };
  TenantNames tenant_names(std::string_view tenant_id);
  // Posts usage_transfer(usage, due) without building it (no allocation of its own): `names` are
  // tenant_names(usage.tenant_id). The billing tick posts one per running workload.
  Status post_usage(const model::UsageRecord& usage, Micros due, TenantNames names);
  Micros balance(std::string_view account) const;
  // Sum over all accounts; zero unless the ledger is corrupt.
  Micros total() const;
  // A tenant's transfers in the order they were posted (unpacked: a copy).
  std::vector<model::Transfer> transfers_of(std::string_view tenant_id) const;

 private:
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view name) const { return std::hash<std::string_view>{}(name); }
  };
  struct Packed {
    const char* text = nullptr;  // the id, followed by the reference, in a chunk of text_
    uint32_t id_size = 0;
    uint32_t reference_size = 0;
    Timestamp at{};
    Micros amount = 0;
    uint32_t from = 0;  // names_ indexes
    uint32_t to = 0;
    uint32_t tenant = 0;
    model::TransferKind kind = model::TransferKind::kUsage;
  };
  static constexpr uint32_t kNoName = UINT32_MAX;

  // Chunks that are never reallocated: storage that grew by doubling copied the whole ledger
  // (tens of MB) in whichever billing tick crossed a power of two (bench/RESULTS.md).
  static constexpr size_t kTextChunk = size_t{1} << 20;  // bytes
  static constexpr size_t kTransferChunkBits = 16;       // 65,536 transfers a chunk
  static constexpr size_t kTransferChunk = size_t{1} << kTransferChunkBits;

  uint32_t intern(std::string_view name);
  uint32_t find(std::string_view name) const;
  // The chunk of text_ to append at most `most` bytes to: pointers into it stay valid.
  std::string& text_room(size_t most);
  void append(const Packed& packed);
  const Packed& transfer_at(size_t position) const;

  std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>> index_;
  std::vector<std::string> names_;              // accounts and tenants, by index
  std::vector<Micros> balances_;                // by name index (0 for a tenant's own name)
  std::vector<std::vector<size_t>> of_tenant_;  // by name index: positions of transfers
  std::vector<std::vector<Packed>> transfers_;  // chunks of kTransferChunk, in posted order
  size_t transfer_count_ = 0;
  std::vector<std::string> text_;  // chunks, each filled only up to the capacity it began with
  uint32_t revenue_ = kNoName;     // names_ index of model::kRevenueAccount
  std::string scratch_;            // tenant_names() builds the cash account's name here
};

}  // namespace gpurent::billing
