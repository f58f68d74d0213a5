// The audit log (model/audit.h): who called what, recorded by the server as each call that may
// change something is answered. Every entry is recorded in the pending ChangeSet (the server
// commits it before answering); only the most recent model::kMaxAuditInMemory stay in memory for
// listing.
#pragma once

#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "controller/change_set.h"
#include "controller/commands.h"
#include "controller/seq_window.h"
#include "model/audit.h"
#include "model/tenant.h"

namespace gpurent::controller {

class AuditLog {
 public:
  // Entries go into `changes` (the controller's pending ChangeSet) as they are recorded.
  AuditLog(const Clock& clock, ChangeSet& changes) : clock_(clock), changes_(changes) {}

  // Rebuilds the window from the stored entries, oldest first; kInternal on a gap in seq.
  Status restore(std::vector<model::AuditRecord> records);
  // Appends an entry, stamped now with the next seq.
  const model::AuditRecord& record(model::AuditRecord record);
  // The entries the caller may read, matching the filter, oldest first, at most `limit`:
  // operators every entry, tenant admins their tenant's; 403 for anyone else.
  Result<std::vector<const model::AuditRecord*>> list(const model::Principal& caller,
                                                      const AuditFilter& filter,
                                                      size_t limit) const;

 private:
  const Clock& clock_;
  ChangeSet& changes_;
  SeqWindow<model::AuditRecord> records_{model::kMaxAuditInMemory};
};

}  // namespace gpurent::controller
