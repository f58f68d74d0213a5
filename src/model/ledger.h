// Accounts and transfers of the double-entry ledger, and per-run usage records.
//
// Every movement of money is a Transfer from one account to another with a positive amount and a
// deterministic id: writing the same transfer twice is refused by the store, so no retry, repeated
// tick or restart can charge twice. The sum of all balances is zero by construction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/money.h"
#include "model/instance.h"

namespace gpurent::model {

// Account names: "tenant:<id>:cash", "platform:revenue", "external:topups", "platform:promotions";
// the prepaid (deferred revenue) accounts of packages and reserved terms are in
// model/accounts.h. docs/billing.md "Accounts" lists them all.
std::string tenant_cash_account(std::string_view tenant_id);
// The same name appended to `out` (which a caller reuses, so that naming allocates nothing).
void append_tenant_cash_account(std::string& out, std::string_view tenant_id);
inline constexpr std::string_view kRevenueAccount = "platform:revenue";
inline constexpr std::string_view kTopupsAccount = "external:topups";
inline constexpr std::string_view kPromotionsAccount = "platform:promotions";

// kPurchase: cash into a prepaid account (a package or a reserved term bought);
// kRecognition: a prepaid account's value earned (used, or expired) into revenue;
// kRefund: cash paid back out of the platform.
enum class TransferKind { kTopup, kUsage, kCredit, kPurchase, kRecognition, kRefund };
std::string_view to_string(TransferKind kind);
bool parse_transfer_kind(std::string_view text, TransferKind* out);
inline bool from_string(std::string_view text, TransferKind* out) {
  return parse_transfer_kind(text, out);
}

struct Transfer {
  std::string id;  // deterministic: the same business event always has the same id
  Timestamp at{};
  std::string from_account;  // debited
  std::string to_account;    // credited
  Micros amount = 0;         // > 0
  TransferKind kind = TransferKind::kUsage;
  std::string tenant_id;
  std::string reference;  // instance id, top-up note, ...
};

// What a record meters: a run (GPU, CPU, memory and disk while the process runs, per hour), or
// a stopped instance's disk (storage, per GB-month, from the end of a run until the instance is
// started again or removed).
enum class UsageKind { kRun, kStoppedDisk };
std::string_view to_string(UsageKind kind);
bool parse_usage_kind(std::string_view text, UsageKind* out);
inline bool from_string(std::string_view text, UsageKind* out) {
  return parse_usage_kind(text, out);
}

// The id of the transfer that charges a usage record up to `billed_seconds` (billing/billing.h,
// "Transfers"): "usage:<instance>:<run>:<billed seconds>" for a run, "storage:..." for a stopped
// disk, appended to `out`. The one place this id is spelled: the ledger, the transfer built for
// a record and the store's packed usage charges all name it here.
void append_usage_transfer_id(std::string& out, UsageKind kind, std::string_view instance_id,
                              int64_t run, int64_t billed_seconds);

// What one run of one instance (or its disk while stopped) has used and been charged. Updated as
// it is metered (billing/billing.h says how a charge follows from the prices).
struct UsageRecord {
  std::string id;  // "<instance id>/<run>", or "<instance id>/<run>/disk"
  std::string tenant_id;
  std::string instance_id;
  int64_t run = 0;
  UsageKind kind = UsageKind::kRun;
  PricingModel pricing = PricingModel::kOnDemand;
  std::string gpu_type;
  int gpu_count = 0;
  int gpu_milli = 1000;  // share of each GPU held (below 1000: the shared tier)
  int cpu = 0;           // cores, memory and disk the spec asked for (0: none asked, none charged)
  int memory_gb = 0;
  int disk_gb = 0;
  // The GPU price per GPU-hour of the last second metered (for people: the price changes with
  // the price book and, for spot work, the spot market).
  Micros price_per_gpu_hour = 0;
  Timestamp started_at{};
  std::optional<Timestamp> ended_at;
  // Metering advances metered_until by whole seconds; the sub-second remainder carries over to the
  // next meter, and time the node was unreachable is skipped by moving metered_until forward.
  Timestamp metered_until{};
  // Whole seconds charged to cash so far (with a run's minimum duration).
  int64_t billed_seconds = 0;
  Micros charged = 0;  // the sum of the charges of all its price segments
  // The open price segment: the latest seconds billed at one rate (billing/billing.h), and what
  // they were charged; segment_charged == charge_pro_rata(segment_rate, 1, segment_seconds, per).
  Micros segment_rate = 0;
  int64_t segment_seconds = 0;
  Micros segment_charged = 0;
  // Whole seconds a compute package covered instead (model/accounts.h): every metered second is
  // in exactly one of billed_seconds and package_seconds.
  int64_t package_seconds = 0;
};

template <class V, schema::Of<UsageRecord> S>
void fields(V& visit, S& x) {
  visit("billed_seconds", x.billed_seconds);
  visit("charged", x.charged);
  visit("cpu", x.cpu, schema::kOptional);
  visit("disk_gb", x.disk_gb, schema::kOptional);
  visit("ended_at", x.ended_at, schema::kOptional);
  visit("gpu_count", x.gpu_count);
  visit("gpu_milli", x.gpu_milli, schema::kOptional);
  visit("gpu_type", x.gpu_type);
  visit("id", x.id);
  visit("instance_id", x.instance_id);
  visit("kind", x.kind, schema::kOptional);
  visit("memory_gb", x.memory_gb, schema::kOptional);
  visit("metered_until", x.metered_until);
  visit("package_seconds", x.package_seconds, schema::kOptional);
  visit("price_per_gpu_hour", x.price_per_gpu_hour);
  visit("pricing", x.pricing, schema::kOptional);
  visit("run", x.run);
  visit("segment_charged", x.segment_charged, schema::kOptional);
  visit("segment_rate", x.segment_rate, schema::kOptional);
  visit("segment_seconds", x.segment_seconds, schema::kOptional);
  visit("started_at", x.started_at);
  visit("tenant_id", x.tenant_id);
}
// Records stored before price segments had one segment: everything billed, at the locked price.
// (Those from before kind and pricing were runs on demand, the members' defaults.)
void upgrade_older(const Json& j, UsageRecord& v);

}  // namespace gpurent::model
