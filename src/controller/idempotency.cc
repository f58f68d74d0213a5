#include "controller/idempotency.h"

namespace gpurent::controller {

void IdempotencyKeys::restore(std::vector<model::IdempotencyRecord> records) {
  for (auto& record : records) {
    records_.emplace(std::make_pair(record.tenant_id, record.key), std::move(record));
  }
}

Result<std::optional<std::string>> IdempotencyKeys::replayed_object(
    std::string_view tenant_id, const std::optional<std::string>& key,
    std::string_view fingerprint) const {
  if (!key) return std::nullopt;
  const auto it = records_.find({std::string(tenant_id), *key});
  if (it == records_.end()) return std::nullopt;
  if (it->second.fingerprint != fingerprint) {
    return fail(Error::conflict("idempotency_key_reused",
                                "this Idempotency-Key was used with a different request"));
  }
  return it->second.object_id;
}

void IdempotencyKeys::remember(std::string_view tenant_id, const std::optional<std::string>& key,
                               std::string fingerprint, std::string_view object_id) {
  if (!key) return;
  model::IdempotencyRecord record{std::string(tenant_id), *key, std::move(fingerprint),
                                  std::string(object_id), clock_.now()};
  changes_.idempotency.push_back(record);
  records_.emplace(std::make_pair(record.tenant_id, record.key), std::move(record));
}

}  // namespace gpurent::controller
