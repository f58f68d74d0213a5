// Quotas: what operators allow a tenant to hold at once (GPUs of each type, instances) and its
// weight in fair share (model/job.h). A tenant without one has no limits and weight 1.
//
// Invariants: a quota belongs to a tenant that exists; its weight is 1..1000 and its limits are
// not negative; every change is in the pending ChangeSet, durable with the command that made it.
// A quota lowered below what a tenant holds stops nothing: it holds back what comes next.
//
// Part of Accounts (accounts.h): Accounts::quotas(). The controller's scheduling passes read it.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/result.h"
#include "controller/change_set.h"
#include "model/job.h"
#include "model/tenant.h"

namespace gpurent::controller {

class Accounts;

class Quotas {
 public:
  struct Context {
    ChangeSet& changes;
    const Accounts& accounts;  // which tenants exist
  };
  explicit Quotas(Context context) : c_(context) {}
  Quotas(const Quotas&) = delete;
  Quotas& operator=(const Quotas&) = delete;

  // The quotas from the store's snapshot.
  void restore(Snapshot& snapshot);

  // Operators only; replaces the tenant's quota.
  Result<model::Quota> set(const model::Principal& caller, model::Quota quota);
  // The tenant's quota (the default one when none was set); tenants see their own only.
  Result<model::Quota> get(const model::Principal& caller, std::string_view tenant_id) const;

  // The tenant's quota; nullptr when none was set.
  const model::Quota* of(std::string_view tenant_id) const;
  int weight(std::string_view tenant_id) const;

 private:
  Context c_;
  std::map<std::string, model::Quota, std::less<>> quotas_;  // by tenant
};

}  // namespace gpurent::controller
