// The SQLite rows that metering writes: usage records and ledger transfers, each in the whole form
// or the packed one (controller/change_set.h: UsageCharge, MeteredUsage), interleaved in the
// order the controller made them. Used by sqlite_store.cc inside its transactions.
//
// - usage_records: (id, tenant_id, body JSON). A whole record is upserted; a packed one updates
//   the fields metering advances in the stored body (json_set), and a packed row for a record the
//   store does not have fails the commit (memory and disk would disagree).
// - ledger_transfers: append-only, a UNIQUE id (a repeated charge fails the whole commit). A
//   packed charge is written as the transfer billing::usage_transfer() builds, so that the rows
//   are the same whichever form the controller used.
#pragma once

#include <sqlite3.h>

#include "common/result.h"
#include "controller/change_set.h"

namespace gpurent::store {

Status write_usage_records(sqlite3* db, const controller::ChangeSet& changes);
Status append_transfers(sqlite3* db, const controller::ChangeSet& changes);

}  // namespace gpurent::store
