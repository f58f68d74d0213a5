#include "controller/audit_log.h"

#include <spdlog/spdlog.h>

namespace gpurent::controller {

Status AuditLog::restore(std::vector<model::AuditRecord> records) {
  return records_.restore(std::move(records), "audit log");
}

const model::AuditRecord& AuditLog::record(model::AuditRecord record) {
  record.at = clock_.now();
  const model::AuditRecord& kept = records_.append(std::move(record));
  spdlog::debug("audit seq={} key={} tenant={} from={} {} {} -> {} {}", kept.seq, kept.key_id,
                kept.tenant_id, kept.address, kept.action, kept.target, kept.status, kept.outcome);
  changes_.audit.push_back(kept);
  return kept;
}

Result<std::vector<const model::AuditRecord*>> AuditLog::list(const model::Principal& caller,
                                                              const AuditFilter& filter,
                                                              size_t limit) const {
  if (!model::at_least(caller.role, model::Role::kTenantAdmin)) {
    return fail(Error{ErrorKind::kPermissionDenied, "forbidden",
                      "the audit log is for tenant admins and operators"});
  }
  const bool every_tenant = caller.is_operator();
  return records_.list(filter.after_seq, limit, [&](const model::AuditRecord& entry) {
    if (!every_tenant && entry.tenant_id != caller.tenant_id) return false;
    if (every_tenant && filter.tenant_id && entry.tenant_id != *filter.tenant_id) return false;
    return !filter.key_id || entry.key_id == *filter.key_id;
  });
}

}  // namespace gpurent::controller
