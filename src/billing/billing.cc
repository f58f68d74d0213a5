#include "billing/billing.h"

#include <fmt/format.h>

#include "model/gpu_catalog.h"

namespace gpurent::billing {

PriceBook::PriceBook(std::string currency) : currency_(std::move(currency)) {
  for (const auto& type : model::gpu_catalog()) {
    if (type.default_price_per_hour > 0) on_demand_.emplace(type.slug, type.default_price_per_hour);
  }
}

std::optional<Micros> PriceBook::on_demand_price(std::string_view gpu_type) const {
  const auto it = on_demand_.find(gpu_type);
  if (it == on_demand_.end()) return std::nullopt;
  return it->second;
}

std::optional<Micros> PriceBook::price(std::string_view gpu_type,
                                       model::PricingModel pricing) const {
  const auto on_demand = on_demand_price(gpu_type);
  if (!on_demand || pricing != model::PricingModel::kSpot) return on_demand;
  return *on_demand * kSpotPricePercent / 100;
}

namespace {

// The metering state of one line item (a run, a volume) and how its total follows from its
// billed seconds.
struct Metered {
  Timestamp& metered_until;
  int64_t& billed_seconds;
  Micros& charged;
};

// Advances the item by the whole seconds in [metered_until, until) and returns what is newly due
// (the new total minus what was charged), or 0. One rounding per line item: the total is always
// computed from all billed seconds, so many small steps equal one big step.
template <class Total>
Micros advance(Metered item, Timestamp until, Total total_for) {
  if (until <= item.metered_until) return 0;
  const int64_t seconds = (until - item.metered_until).count() / 1000;
  if (seconds <= 0) return 0;
  item.metered_until += Millis(seconds * 1000);
  item.billed_seconds += seconds;
  const Micros total = total_for(item.billed_seconds);
  const Micros delta = total - item.charged;
  item.charged = total;
  return delta;
}

model::Transfer charge(std::string id, Timestamp at, const std::string& tenant_id, Micros amount,
                       std::string reference) {
  return model::Transfer{
      .id = std::move(id),
      .at = at,
      .from_account = model::tenant_cash_account(tenant_id),
      .to_account = std::string(model::kRevenueAccount),
      .amount = amount,
      .kind = model::TransferKind::kUsage,
      .tenant_id = tenant_id,
      .reference = std::move(reference),
  };
}

}  // namespace

std::optional<model::Transfer> meter_run(model::UsageRecord& usage, Timestamp until) {
  const Micros due = advance(
      {usage.metered_until, usage.billed_seconds, usage.charged}, until, [&](int64_t seconds) {
        return charge_for_seconds(usage.price_per_gpu_hour,
                                  int64_t{usage.gpu_count} * usage.gpu_milli, seconds);
      });
  if (due <= 0) return std::nullopt;
  return charge(fmt::format("usage:{}:{}:{}", usage.instance_id, usage.run, usage.billed_seconds),
                usage.metered_until, usage.tenant_id, due, usage.instance_id);
}

std::optional<model::Transfer> meter_volume(model::Volume& volume, Timestamp until) {
  const Micros due = advance({volume.metered_until, volume.billed_seconds, volume.charged}, until,
                             [&](int64_t seconds) {
                               return charge_pro_rata(volume.price_per_gb_month, volume.size_gb,
                                                      seconds, model::kSecondsPerBillingMonth);
                             });
  if (due <= 0) return std::nullopt;
  return charge(fmt::format("volume:{}:{}", volume.id, volume.billed_seconds), volume.metered_until,
                volume.tenant_id, due, volume.id);
}

Status Ledger::post(const model::Transfer& transfer) {
  if (transfer.amount <= 0) {
    return fail(Error::internal(fmt::format("transfer {} has non-positive amount", transfer.id)));
  }
  if (transfer.from_account == transfer.to_account) {
    return fail(
        Error::internal(fmt::format("transfer {} moves money to its own account", transfer.id)));
  }
  balances_[transfer.from_account] -= transfer.amount;
  balances_[transfer.to_account] += transfer.amount;
  if (!transfer.tenant_id.empty()) by_tenant_[transfer.tenant_id].push_back(transfer);
  return {};
}

Micros Ledger::balance(std::string_view account) const {
  const auto it = balances_.find(std::string(account));
  return it == balances_.end() ? 0 : it->second;
}

Micros Ledger::total() const {
  Micros sum = 0;
  for (const auto& [account, balance] : balances_) sum += balance;
  return sum;
}

const std::vector<model::Transfer>& Ledger::transfers_of(std::string_view tenant_id) const {
  static const std::vector<model::Transfer> kNone;
  const auto it = by_tenant_.find(std::string(tenant_id));
  return it == by_tenant_.end() ? kNone : it->second;
}

}  // namespace gpurent::billing
