#include "controller/accounts.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "controller/internal.h"

namespace gpurent::controller {

Status Accounts::restore(Snapshot& snapshot) {
  for (auto& tenant : snapshot.tenants) tenants_.emplace(tenant.id, std::move(tenant));
  credentials_.restore(snapshot);
  for (const auto& transfer : snapshot.transfers) {
    if (transfer.kind == model::TransferKind::kTopup) topups_.emplace(transfer.id, transfer);
    if (auto posted = ledger_.post(transfer); !posted) return posted;
  }
  if (ledger_.total() != 0) return fail(Error::internal("restored ledger does not sum to zero"));
  packages_.restore(snapshot);
  quotas_.restore(snapshot);
  for (auto& settings : snapshot.balance_settings) {
    balance_settings_.insert_or_assign(settings.tenant_id, std::move(settings));
  }
  return {};
}

bool Accounts::has_tenant(std::string_view tenant_id) const { return tenants_.contains(tenant_id); }

Micros Accounts::cash(std::string_view tenant_id) const {
  return ledger_.balance(model::tenant_cash_account(tenant_id));
}

Status Accounts::post(model::Transfer transfer) {
  if (auto posted = ledger_.post(transfer); !posted) return posted;
  c_.changes.transfers.push_back(std::move(transfer));
  return {};
}

Status Accounts::post_usage(const model::UsageRecord& usage, Micros due,
                            billing::Ledger::TenantNames names) {
  GPURENT_CHECK(ledger_.post_usage(usage, due, names));
  c_.changes.add_usage_charge(usage, due);
  return {};
}

Result<model::ApiKey> Accounts::bootstrap_admin(std::string_view secret_hash,
                                                std::string_view prefix, Micros credit) {
  if (const model::ApiKey* key = credentials_.key_with_hash(secret_hash)) return *key;
  auto tenant_it = std::find_if(tenants_.begin(), tenants_.end(),
                                [](const auto& entry) { return entry.second.name == "admin"; });
  if (tenant_it == tenants_.end()) {
    model::Tenant tenant{c_.rng.id("t-"), "admin", now()};
    c_.changes.tenants.push_back(tenant);
    tenant_it = tenants_.emplace(tenant.id, tenant).first;
    if (credit > 0) {
      GPURENT_CHECK(post({.id = "promotion:bootstrap:" + tenant.id,
                          .at = now(),
                          .from_account = std::string(model::kPromotionsAccount),
                          .to_account = model::tenant_cash_account(tenant.id),
                          .amount = credit,
                          .kind = model::TransferKind::kCredit,
                          .tenant_id = tenant.id,
                          .reference = "bootstrap credit"}));
    }
  }
  return credentials_.add_admin_key(tenant_it->first, secret_hash, prefix);
}

std::string Accounts::tenant_id_for(const Principal& caller, std::string_view ref) const {
  if (ref.empty() || tenants_.contains(std::string(ref))) return std::string(ref);
  for (const auto& [id, tenant] : tenants_) {
    if (tenant.name == ref && visible_to(caller, id)) return id;
  }
  return std::string(ref);
}

Result<model::Tenant> Accounts::create_tenant(const Principal& caller, std::string name) {
  if (!caller.is_operator()) return fail(forbidden("create tenants"));
  for (const auto& [id, tenant] : tenants_) {
    if (tenant.name == name) {
      return fail(Error::conflict("tenant_name_taken", fmt::format("tenant '{}' exists", name)));
    }
  }
  model::Tenant tenant{c_.rng.id("t-"), std::move(name), now()};
  tenants_.emplace(tenant.id, tenant);
  c_.changes.tenants.push_back(tenant);
  return tenant;
}

std::vector<const model::Tenant*> Accounts::tenants(const Principal& caller) const {
  std::vector<const model::Tenant*> out;
  for (const auto& [id, tenant] : tenants_) {
    if (visible_to(caller, id)) out.push_back(&tenant);
  }
  return out;
}

Result<TopupResult> Accounts::topup(const Principal& caller, std::string_view tenant_id,
                                    Micros amount, std::string reference,
                                    std::optional<std::string> idempotency_key) {
  if (!caller.is_operator()) return fail(forbidden("top up balances"));
  if (!tenants_.contains(tenant_id)) return fail(Error::not_found("tenant", tenant_id));
  if (amount <= 0)
    return fail(Error::invalid("invalid_field", "field 'amount_micros' must be > 0"));
  const std::string id = idempotency_key ? fmt::format("topup:{}:{}", tenant_id, *idempotency_key)
                                         : fmt::format("topup:{}:{}", tenant_id, c_.rng.id(""));
  if (const auto it = topups_.find(id); it != topups_.end()) {
    if (it->second.amount != amount || it->second.reference != reference) {
      return fail(Error::conflict("idempotency_key_reused",
                                  "this Idempotency-Key was used for a different top-up"));
    }
    return TopupResult{it->second, cash(tenant_id)};
  }
  model::Transfer transfer{.id = id,
                           .at = now(),
                           .from_account = std::string(model::kTopupsAccount),
                           .to_account = model::tenant_cash_account(tenant_id),
                           .amount = amount,
                           .kind = model::TransferKind::kTopup,
                           .tenant_id = std::string(tenant_id),
                           .reference = std::move(reference)};
  GPURENT_CHECK(post(transfer));
  topups_.emplace(id, transfer);
  // Funded above the threshold now (a new tenant's first top-up): the next fall below it warns,
  // without waiting for a billing tick to notice the top-up.
  guard_balance(tenant_id);
  return TopupResult{std::move(transfer), cash(tenant_id)};
}

Result<Micros> Accounts::balance(const Principal& caller, std::string_view tenant_id) const {
  if (!visible_to(caller, tenant_id) || !tenants_.contains(tenant_id)) {
    return fail(Error::not_found("tenant", tenant_id));
  }
  return cash(tenant_id);
}

std::vector<model::Transfer> Accounts::transfers(std::string_view tenant_id) const {
  return ledger_.transfers_of(tenant_id);
}

Status Accounts::check_can_pay(std::string_view tenant_id, Micros amount,
                               std::string_view what) const {
  const Micros balance = cash(tenant_id);
  if (balance >= amount) return {};
  return fail(Error{
      ErrorKind::kPaymentRequired, "insufficient_funds",
      fmt::format("the balance, {}, does not cover {}, {}; top up first (`gpurent "
                  "balance`)",
                  format_money(balance, c_.currency), what, format_money(amount, c_.currency))});
}

Result<model::BalanceSettings> Accounts::set_balance_settings(const Principal& caller,
                                                              model::BalanceSettings settings) {
  if (!caller.is_operator()) return fail(forbidden("set balance settings"));
  if (!tenants_.contains(settings.tenant_id)) {
    return fail(Error::not_found("tenant", settings.tenant_id));
  }
  if (settings.warning_threshold < 0 || settings.credit_limit < 0) {
    return fail(Error::invalid("invalid_field",
                               "warning_threshold_micros and credit_limit_micros must be ≥ 0"));
  }
  settings.warned = balance_settings(settings.tenant_id).warned;
  balance_settings_.insert_or_assign(settings.tenant_id, settings);
  c_.changes.balance_settings.push_back(settings);
  guard_balance(settings.tenant_id);
  return balance_settings_.at(settings.tenant_id);
}

model::BalanceSettings Accounts::balance_settings(std::string_view tenant_id) const {
  const auto it = balance_settings_.find(tenant_id);
  if (it != balance_settings_.end()) return it->second;
  return model::BalanceSettings{.tenant_id = std::string(tenant_id)};
}

std::set<std::string> Accounts::guard_balances() {
  std::set<std::string> overdrawn;
  for (const auto& [id, tenant] : tenants_) {
    if (guard_balance(id)) overdrawn.insert(id);
  }
  return overdrawn;
}

bool Accounts::over_credit_limit(std::string_view tenant_id) const {
  return cash(tenant_id) < -balance_settings(tenant_id).credit_limit;
}

bool Accounts::guard_balance(std::string_view tenant_id) {
  const Micros balance = cash(tenant_id);
  model::BalanceSettings settings = balance_settings(tenant_id);
  const bool low = balance < settings.warning_threshold;
  if (low != settings.warned) {
    // Once per crossing: warned stays set until the balance is back at or above the threshold.
    settings.warned = low;
    if (low) {
      c_.events.record(
          tenant_id, tenant_id, model::event_kind::kBalanceLow,
          fmt::format("balance {} is below the warning threshold {}", format_micros(balance),
                      format_micros(settings.warning_threshold)));
    }
    c_.changes.balance_settings.push_back(settings);
    balance_settings_.insert_or_assign(std::string(tenant_id), std::move(settings));
  }
  return over_credit_limit(tenant_id);
}

}  // namespace gpurent::controller
