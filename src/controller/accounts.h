// Accounts: who may call, and their money. Tenants; API keys, console sessions and join tokens
// (Credentials, credentials.h); the double-entry ledger (billing::Ledger: top-ups, charges,
// refunds, credits); the balance settings (warning threshold, credit limit); prepaid compute
// packages (Packages, packages.h) and quotas (Quotas, quotas.h).
//
// Invariants: the ledger sums to zero; a tenant's name is unique. Every change goes into the
// pending ChangeSet (durable with the command that made it); balance.low events into the EventLog.
//
// Visibility: tenants see their own tenant only; operators and admins see all.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "billing/billing.h"
#include "common/clock.h"
#include "common/random.h"
#include "common/result.h"
#include "controller/change_set.h"
#include "controller/commands.h"
#include "controller/credentials.h"
#include "controller/event_log.h"
#include "controller/idempotency.h"
#include "controller/packages.h"
#include "controller/quotas.h"
#include "model/accounts.h"
#include "model/ledger.h"
#include "model/tenant.h"

namespace gpurent::controller {

class Accounts {
 public:
  struct Context {
    const Clock& clock;
    Rng& rng;
    ChangeSet& changes;
    EventLog& events;
    IdempotencyKeys& idempotency;
    std::string currency;
  };
  explicit Accounts(Context context) : c_(std::move(context)) {}
  Accounts(const Accounts&) = delete;
  Accounts& operator=(const Accounts&) = delete;

  // From the store's snapshot; kInternal when the restored ledger does not sum to zero.
  Status restore(Snapshot& snapshot);

  // --- Tenants ---------------------------------------------------------------------------------
  // Ensures the bootstrap tenant ("admin") exists and an admin key with this hash belongs to it;
  // credits the tenant once with `credit` (a promotion transfer) when it is created.
  Result<model::ApiKey> bootstrap_admin(std::string_view secret_hash, std::string_view prefix,
                                        Micros credit);
  bool has_tenant(std::string_view tenant_id) const;
  // The tenant a reference names: its id, or else the name of one the caller may see (names are
  // unique); anything else unchanged, for the caller's own not-found answer (which so never
  // reveals another tenant's id).
  std::string tenant_id_for(const model::Principal& caller, std::string_view ref) const;
  Result<model::Tenant> create_tenant(const model::Principal& caller, std::string name);
  std::vector<const model::Tenant*> tenants(const model::Principal& caller) const;

  // --- API keys, console sessions, join tokens (credentials.h)
  // ------------------------------------
  Credentials& credentials() { return credentials_; }
  const Credentials& credentials() const { return credentials_; }

  // --- Money ------------------------------------------------------------------------------------
  // Operators credit a tenant's cash; the Idempotency-Key makes a retry return the first top-up.
  Result<TopupResult> topup(const model::Principal& caller, std::string_view tenant_id,
                            Micros amount, std::string reference,
                            std::optional<std::string> idempotency_key);
  // The tenant's cash balance (404 for a tenant the caller may not see).
  Result<Micros> balance(const model::Principal& caller, std::string_view tenant_id) const;
  Micros cash(std::string_view tenant_id) const;
  std::vector<model::Transfer> transfers(std::string_view tenant_id) const;
  // The sum of every account: zero, always.
  Micros ledger_total() const { return ledger_.total(); }
  // Posts a transfer to the ledger and the pending changes.
  Status post(model::Transfer transfer);
  // Metering's charge of `due` to a usage record, packed (billing::Ledger::post_usage); `names`
  // from tenant_names(), which a caller charging one tenant often keeps.
  Status post_usage(const model::UsageRecord& usage, Micros due,
                    billing::Ledger::TenantNames names);
  billing::Ledger::TenantNames tenant_names(std::string_view tenant_id) {
    return ledger_.tenant_names(tenant_id);
  }
  // kPaymentRequired insufficient_funds unless the tenant's cash covers `amount` (`what` it is).
  Status check_can_pay(std::string_view tenant_id, Micros amount, std::string_view what) const;

  // --- Balance settings -------------------------------------------------------------------------
  Result<model::BalanceSettings> set_balance_settings(const model::Principal& caller,
                                                      model::BalanceSettings settings);
  model::BalanceSettings balance_settings(std::string_view tenant_id) const;
  // Records balance.low once per crossing below the warning threshold; true when the tenant is
  // below zero minus its credit limit (its work is to stop, and starts are refused).
  bool guard_balance(std::string_view tenant_id);
  // guard_balance() for every tenant: the ids of those over their credit limit.
  std::set<std::string> guard_balances();
  bool over_credit_limit(std::string_view tenant_id) const;

  // --- Compute packages (packages.h) -----------------------------------------------------------
  Packages& packages() { return packages_; }
  const Packages& packages() const { return packages_; }

  // --- Quotas and fair-share weights (quotas.h) -------------------------------------------------
  // Set through Controller::set_quota, which tries queued work again under the new quota.
  Quotas& quotas() { return quotas_; }
  const Quotas& quotas() const { return quotas_; }

 private:
  Timestamp now() const { return c_.clock.now(); }

  Context c_;
  billing::Ledger ledger_;
  std::map<std::string, model::Tenant, std::less<>> tenants_;
  std::map<std::string, model::Transfer, std::less<>> topups_;  // by id, for idempotent retries
  std::map<std::string, model::BalanceSettings, std::less<>> balance_settings_;
  Packages packages_{{c_.clock, c_.rng, c_.changes, c_.idempotency, *this}};
  Quotas quotas_{{c_.changes, *this}};
  Credentials credentials_{{c_.clock, c_.rng, c_.changes, *this}};
};

}  // namespace gpurent::controller
