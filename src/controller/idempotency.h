// Idempotency-Key records: a create command retried with the same key and the same body answers
// the object the first one made; the same key with another body is refused. Records are per
// tenant, durable with the command that made the object (the pending ChangeSet).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "controller/change_set.h"
#include "model/tenant.h"

namespace gpurent::controller {

class IdempotencyKeys {
 public:
  IdempotencyKeys(const Clock& clock, ChangeSet& changes) : clock_(clock), changes_(changes) {}

  void restore(std::vector<model::IdempotencyRecord> records);
  // The id of the object a retry refers to; none when there is no key or it is new; 409
  // idempotency_key_reused when the key came with another body (another fingerprint).
  Result<std::optional<std::string>> replayed_object(std::string_view tenant_id,
                                                     const std::optional<std::string>& key,
                                                     std::string_view fingerprint) const;
  // Records that the request with `key` (if any) made `object_id`.
  void remember(std::string_view tenant_id, const std::optional<std::string>& key,
                std::string fingerprint, std::string_view object_id);

 private:
  const Clock& clock_;
  ChangeSet& changes_;
  std::map<std::pair<std::string, std::string>, model::IdempotencyRecord> records_;
};

}  // namespace gpurent::controller
