// Packages: prepaid compute (model/accounts.h). Operators define products (a GPU type, GPU-hours,
// a price, a validity); a tenant buys one from its cash at once, and metering then draws the
// tenant's runs of that type from its packages, soonest to expire first, before charging cash.
// What a package still holds when its validity ends is earned by the platform.
//
// Invariants: a package's used capacity stays within its capacity; a package belongs to one
// tenant and is listed under it in the order bought; every purchase, draw and expiry is a ledger
// transfer (posted through Accounts, so the ledger still sums to zero) and a package change in the
// pending ChangeSet, durable with the command that made it.
//
// Part of Accounts (accounts.h), whose ledger pays for a package: Accounts::packages().
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/random.h"
#include "common/result.h"
#include "controller/change_set.h"
#include "controller/commands.h"
#include "controller/idempotency.h"
#include "model/accounts.h"
#include "model/ledger.h"
#include "model/tenant.h"

namespace gpurent::controller {

class Accounts;

class Packages {
 public:
  struct Context {
    const Clock& clock;
    Rng& rng;
    ChangeSet& changes;
    IdempotencyKeys& idempotency;
    Accounts& accounts;  // its ledger pays for purchases, draws and expiries
  };
  explicit Packages(Context context) : c_(context) {}
  Packages(const Packages&) = delete;
  Packages& operator=(const Packages&) = delete;

  // Products and packages from the store's snapshot.
  void restore(Snapshot& snapshot);

  // Operators only; a product of the same name is replaced (packages bought keep their terms).
  Result<model::PackageProduct> set_product(const model::Principal& caller,
                                            model::PackageProduct product);
  // By name.
  std::vector<const model::PackageProduct*> products() const;
  // Charges the product's price from the tenant's cash at once (402 insufficient_funds when the
  // balance does not cover it); the Idempotency-Key makes a retry return the first package.
  Result<CreatedPackage> buy(const model::Principal& caller, std::string product,
                             const std::optional<std::string>& idempotency_key,
                             std::string fingerprint);
  // The tenant's packages, in the order bought (expired and used-up ones too).
  std::vector<const model::Package*> of_tenant(std::string_view tenant_id) const;
  // Covers the first seconds of the run's next interval, up to `until`, from the tenant's
  // packages of its type, soonest to expire first; true if it drew any.
  bool draw(model::UsageRecord& usage, Timestamp until);
  // Earns the remainder of packages whose validity has ended.
  void expire();

 private:
  // Upserted whole: a repeated copy in one batch just writes the latest state last.
  void touch(const model::Package& package) { c_.changes.packages.push_back(package); }

  Context c_;
  std::map<std::string, model::PackageProduct, std::less<>> products_;
  std::map<std::string, model::Package, std::less<>> packages_;
  std::unordered_map<std::string, std::vector<std::string>> by_tenant_;
};

}  // namespace gpurent::controller
