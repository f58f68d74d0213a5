// Prepaid compute packages and per-tenant balance settings: the objects behind the ledger
// accounts that are not plain cash (docs/billing.md "Accounts").
//
// Contract:
// - A package is bought for money and holds GPU time of one type, counted in milli-GPU-seconds
//   (1000 = one GPU for one second, so fractional GPUs draw pro rata). Its ledger account
//   "tenant:<t>:package:<id>" holds the money paid and not yet earned (deferred revenue): the
//   value of the GPU time used moves to revenue as it is used, and whatever is left at expiry is
//   earned then. So the account's balance is always price - recognised, and recognised is always
//   charge_pro_rata(price, used, 1, capacity) until expiry, price after it.
// - Downtime records what the SLA credits (billing/sla.h) are computed from.
// - A tenant's balance settings say when it is warned (balance below warning_threshold) and how
//   far below zero it may go before its work is stopped (credit_limit).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/field_table.h"
#include "common/money.h"

namespace gpurent::model {

std::string tenant_package_account(std::string_view tenant_id, std::string_view package_id);
// A reserved term's prepaid account (model/job.h, billing/reserved.h).
std::string tenant_reservation_account(std::string_view tenant_id, std::string_view reservation_id);
// Credits the platform grants (SLA); promotions stay in kPromotionsAccount.
inline constexpr std::string_view kSlaCreditsAccount = "platform:credits:sla";
// Money paid back to tenants leaves the platform through this account.
inline constexpr std::string_view kRefundsAccount = "external:refunds";

inline constexpr int64_t kMilliGpuSecondsPerGpuHour = int64_t{3600} * 1000;

// What operators sell: `gpu_hours` of `gpu_type` for `price`, valid `validity_days` from purchase.
struct PackageProduct {
  std::string name;  // the key
  std::string gpu_type;
  int64_t gpu_hours = 0;  // > 0
  Micros price = 0;       // > 0
  int validity_days = 0;  // > 0
};

template <class V, schema::Of<PackageProduct> S>
void fields(V& visit, S& x) {
  visit("gpu_hours", x.gpu_hours);
  visit("gpu_type", x.gpu_type);
  visit("name", x.name);
  visit("price", x.price);
  visit("validity_days", x.validity_days);
}

struct Package {
  std::string id;
  std::string tenant_id;
  std::string product;
  std::string gpu_type;
  int64_t capacity = 0;  // milli-GPU-seconds bought
  int64_t used = 0;      // milli-GPU-seconds drawn
  Micros price = 0;
  Micros recognised = 0;  // moved to revenue so far
  Timestamp bought_at{};
  Timestamp expires_at{};
  bool expired = false;  // its remainder was recognised at expiry
  std::string idempotency_key;
};

template <class V, schema::Of<Package> S>
void fields(V& visit, S& x) {
  visit("bought_at", x.bought_at);
  visit("capacity", x.capacity);
  visit("expired", x.expired);
  visit("expires_at", x.expires_at);
  visit("gpu_type", x.gpu_type);
  visit("id", x.id);
  visit("idempotency_key", x.idempotency_key, schema::kOptional);
  visit("price", x.price);
  visit("product", x.product);
  visit("recognised", x.recognised);
  visit("tenant_id", x.tenant_id);
  visit("used", x.used);
}

inline constexpr Micros kDefaultWarningThreshold = 10 * kMicrosPerUnit;
inline constexpr Micros kDefaultCreditLimit = 0;

struct BalanceSettings {
  std::string tenant_id;
  Micros warning_threshold = kDefaultWarningThreshold;  // balance.low below this
  Micros credit_limit = kDefaultCreditLimit;            // work stops below -credit_limit
  // The balance was below the threshold when last checked. A warning is a crossing from at or
  // above to below, so a tenant that was never funded above it (a new one) is not warned.
  bool warned = true;
};

template <class V, schema::Of<BalanceSettings> S>
void fields(V& visit, S& x) {
  visit("credit_limit", x.credit_limit);
  visit("tenant_id", x.tenant_id);
  visit("warned", x.warned);
  visit("warning_threshold", x.warning_threshold);
}

// Platform-caused downtime of one instance (SLA): from the node's last good report, or the
// preemption of non-spot work, until the instance runs again or is stopped. Open while `end` is
// unset.
struct Downtime {
  std::string id;  // "dt:<instance>:<start, unix ms>"
  std::string tenant_id;
  std::string instance_id;
  std::string cause;  // "node_down", "preempted"
  Timestamp start{};
  std::optional<Timestamp> end;
};

template <class V, schema::Of<Downtime> S>
void fields(V& visit, S& x) {
  visit("cause", x.cause);
  visit("end", x.end, schema::kOptional);
  visit("id", x.id);
  visit("instance_id", x.instance_id);
  visit("start", x.start);
  visit("tenant_id", x.tenant_id);
}

}  // namespace gpurent::model
