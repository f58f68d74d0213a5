// Metering's statements: monthly invoices and the SLA's credits.
#include <charconv>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "billing/reserved.h"
#include "billing/sla.h"
#include "controller/internal.h"
#include "controller/metering.h"

namespace gpurent::controller {

Result<std::vector<billing::Month>> Metering::invoice_months(const Principal& caller,
                                                             std::string_view tenant_id) const {
  GPURENT_CHECK(c_.accounts.balance(caller, tenant_id));
  return billing::invoice_months(tenant_id, c_.accounts.transfers(tenant_id));
}

Result<billing::Invoice> Metering::invoice(const Principal& caller, std::string_view tenant_id,
                                           billing::Month month) const {
  GPURENT_CHECK(c_.accounts.balance(caller, tenant_id));
  // Usage records are "<instance>/<run>"; the run's type is its own (a restart may move types).
  const auto describe = [&](std::string_view run) {
    const auto colon = run.rfind(':');
    const auto instance = c_.instances.find(run.substr(0, colon));
    const auto usage =
        usage_.find(fmt::format("{}/{}", run.substr(0, colon), run.substr(colon + 1)));
    if (instance == c_.instances.end() || usage == usage_.end()) return std::string(run);
    return fmt::format("{} {}", usage->second.gpu_type,
                       model::to_string(instance->second.spec.pricing));
  };
  return billing::build_invoice(tenant_id, c_.currency, month, c_.accounts.transfers(tenant_id),
                                describe);
}

void Metering::settle_sla_credits() {
  const billing::Month current = billing::month_of(now());
  const billing::Month last = billing::month_of(current.start() - Millis(1));
  if (sla_settled_month_ == last.id()) return;
  sla_settled_month_ = last.id();
  const std::map<std::string, int64_t> down = c_.downtime.seconds_down(last.start(), last.end());
  // Each tenant's transfers, unpacked from the ledger once for all its instances.
  std::map<std::string, std::vector<model::Transfer>, std::less<>> transfers_of;
  for (const auto& [instance_id, down_seconds] : down) {
    const model::Instance& instance = c_.instances.at(instance_id);
    auto transfers = transfers_of.find(instance.tenant_id);
    if (transfers == transfers_of.end()) {
      transfers =
          transfers_of.emplace(instance.tenant_id, c_.accounts.transfers(instance.tenant_id)).first;
    }
    const std::string id = fmt::format("sla:{}:{}", instance_id, last.id());
    billing::SlaMonth month{.down_seconds = down_seconds};
    bool credited = false;
    // Seconds billed in the month: a usage id carries the run's cumulative billed seconds.
    std::map<std::string, int64_t> seconds_before;
    const std::string prefix = fmt::format("usage:{}:", instance_id);
    for (const auto& t : transfers->second) {
      credited |= t.id == id;
      if (!t.id.starts_with(prefix)) continue;
      const auto colon = t.id.rfind(':');
      int64_t seconds = 0;
      if (std::from_chars(t.id.data() + colon + 1, t.id.data() + t.id.size(), seconds).ec !=
          std::errc()) {
        continue;
      }
      int64_t& before = seconds_before[t.id.substr(0, colon)];
      if (t.at >= last.start() && t.at < last.end()) {
        month.up_seconds += seconds - before;
        month.gpu_charges += t.amount;
      }
      before = seconds;
    }
    const Micros credit = billing::sla_credit(month);
    if (credited || credit <= 0) continue;
    // Dated in the month it is for, so that month's invoice shows it.
    auto posted = c_.accounts.post({.id = id,
                                    .at = last.end() - Millis(1),
                                    .from_account = std::string(model::kSlaCreditsAccount),
                                    .to_account = model::tenant_cash_account(instance.tenant_id),
                                    .amount = credit,
                                    .kind = model::TransferKind::kCredit,
                                    .tenant_id = instance.tenant_id,
                                    .reference = instance_id});
    if (!posted) {
      spdlog::error("SLA credit {} failed: {}", id, posted.error().message);
      continue;
    }
    c_.events.record(
        instance.tenant_id, instance_id, model::event_kind::kSlaCredit,
        fmt::format("{}: availability {} s up, {} s down: credit {} ({} % of {})", last.id(),
                    month.up_seconds, month.down_seconds, format_micros(credit),
                    billing::sla_credit_percent(month), format_micros(month.gpu_charges)));
  }
}

}  // namespace gpurent::controller
