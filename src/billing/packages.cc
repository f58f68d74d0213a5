#include "billing/packages.h"

#include <algorithm>

#include <fmt/format.h>

namespace gpurent::billing {
namespace {

model::Transfer recognition(const model::Package& package, std::string id, Micros amount,
                            Timestamp at) {
  return model::Transfer{
      .id = std::move(id),
      .at = at,
      .from_account = model::tenant_package_account(package.tenant_id, package.id),
      .to_account = std::string(model::kRevenueAccount),
      .amount = amount,
      .kind = model::TransferKind::kRecognition,
      .tenant_id = package.tenant_id,
      .reference = package.id};
}

}  // namespace

model::Transfer package_purchase(const model::Package& package) {
  return model::Transfer{.id = "package:" + package.id,
                         .at = package.bought_at,
                         .from_account = model::tenant_cash_account(package.tenant_id),
                         .to_account = model::tenant_package_account(package.tenant_id, package.id),
                         .amount = package.price,
                         .kind = model::TransferKind::kPurchase,
                         .tenant_id = package.tenant_id,
                         .reference = package.product};
}

std::vector<model::Transfer> draw_packages(model::UsageRecord& usage, Timestamp until,
                                           const std::vector<model::Package*>& packages) {
  std::vector<model::Transfer> out;
  const int64_t per_second = int64_t{usage.gpu_count} * usage.gpu_milli;
  if (per_second <= 0) return out;
  for (model::Package* package : packages) {
    if (package->expired || package->gpu_type != usage.gpu_type) continue;
    const Timestamp end = std::min(until, package->expires_at);
    if (end <= usage.metered_until) continue;
    const int64_t seconds = std::min((end - usage.metered_until).count() / 1000,
                                     (package->capacity - package->used) / per_second);
    if (seconds <= 0) continue;
    usage.metered_until += Millis(seconds * 1000);
    usage.package_seconds += seconds;
    package->used += seconds * per_second;
    const Micros earned = charge_pro_rata(package->price, package->used, 1, package->capacity);
    if (earned > package->recognised) {
      out.push_back(recognition(*package,
                                fmt::format("package-use:{}:{}", package->id, package->used),
                                earned - package->recognised, usage.metered_until));
      package->recognised = earned;
    }
  }
  return out;
}

std::optional<model::Transfer> expire_package(model::Package& package, Timestamp now) {
  if (package.expired || now < package.expires_at) return std::nullopt;
  package.expired = true;
  const Micros remainder = package.price - package.recognised;
  if (remainder <= 0) return std::nullopt;
  package.recognised = package.price;
  return recognition(package, "package-expiry:" + package.id, remainder, package.expires_at);
}

}  // namespace gpurent::billing
