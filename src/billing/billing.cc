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

std::optional<model::Transfer> meter_run(model::UsageRecord& usage, Timestamp until) {
  if (until <= usage.metered_until) return std::nullopt;
  const int64_t seconds = (until - usage.metered_until).count() / 1000;
  if (seconds <= 0) return std::nullopt;
  usage.metered_until += Millis(seconds * 1000);
  usage.billed_seconds += seconds;
  const Micros total = charge_for_seconds(
      usage.price_per_gpu_hour, int64_t{usage.gpu_count} * usage.gpu_milli, usage.billed_seconds);
  const Micros delta = total - usage.charged;
  usage.charged = total;
  if (delta <= 0) return std::nullopt;
  return model::Transfer{
      .id = fmt::format("usage:{}:{}:{}", usage.instance_id, usage.run, usage.billed_seconds),
      .at = usage.metered_until,
      .from_account = model::tenant_cash_account(usage.tenant_id),
      .to_account = std::string(model::kRevenueAccount),
      .amount = delta,
      .kind = model::TransferKind::kUsage,
      .tenant_id = usage.tenant_id,
      .reference = usage.instance_id,
  };
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
