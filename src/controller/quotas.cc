#include "controller/quotas.h"

#include "controller/accounts.h"

#include <utility>

#include <fmt/format.h>

#include "controller/internal.h"
#include "model/gpu_catalog.h"

namespace gpurent::controller {

void Quotas::restore(Snapshot& snapshot) {
  for (auto& quota : snapshot.quotas) quotas_.emplace(quota.tenant_id, std::move(quota));
}

Result<model::Quota> Quotas::set(const Principal& caller, model::Quota quota) {
  if (!caller.is_operator()) return fail(forbidden("set quotas"));
  if (!c_.accounts.has_tenant(quota.tenant_id)) {
    return fail(Error::not_found("tenant", quota.tenant_id));
  }
  const auto negative = [](const std::optional<int>& limit) { return limit && *limit < 0; };
  if (quota.weight < 1 || quota.weight > 1000 || negative(quota.max_instances) ||
      negative(quota.max_queued) || negative(quota.max_array) || negative(quota.max_body_bytes)) {
    return fail(Error::invalid("invalid_field", "weight must be 1..1000 and limits ≥ 0"));
  }
  for (const auto& [type, limit] : quota.max_gpus_per_type) {
    if (!model::find_gpu_type(type) || limit < 0) {
      return fail(Error::invalid("invalid_field",
                                 fmt::format("max_gpus_per_type: '{}' needs a known type and a "
                                             "limit ≥ 0",
                                             type)));
    }
  }
  c_.changes.quotas.push_back(quota);
  quotas_.insert_or_assign(quota.tenant_id, quota);
  return quota;
}

Result<model::Quota> Quotas::get(const Principal& caller, std::string_view tenant_id) const {
  if (!visible_to(caller, tenant_id) || !c_.accounts.has_tenant(tenant_id)) {
    return fail(Error::not_found("tenant", tenant_id));
  }
  if (const model::Quota* quota = of(tenant_id)) return *quota;
  return model::Quota{.tenant_id = std::string(tenant_id)};
}

const model::Quota* Quotas::of(std::string_view tenant_id) const {
  const auto it = quotas_.find(tenant_id);
  return it == quotas_.end() ? nullptr : &it->second;
}

int Quotas::weight(std::string_view tenant_id) const {
  const model::Quota* quota = of(tenant_id);
  return quota == nullptr ? 1 : quota->weight;
}

}  // namespace gpurent::controller
