// The SQLite tables of the controller's monitoring (controller/monitoring.h): GPU rollup rows,
// the API's alert rules, and the bounded alert history. Used by sqlite_store.cc inside its
// transactions; kept apart so that the store's own file stays about objects and money.
//
// - gpu_rollups: one row per (resolution, bucket start, GPU, metric), keyed in that order so that
//   pruning past retention is a range delete. Rows are upserted: a bucket rebuilt after a restart
//   replaces its row.
// - alert_rules: (name, body JSON, monitor/alerts_json.h).
// - alert_history: (seq, body JSON: the transition, plus acknowledged_by and acknowledged_at_ms
//   once acknowledged, when the row is rewritten); rows beyond the newest kMaxAlertHistory are
//   deleted as new ones come in.
#pragma once

#include <sqlite3.h>

#include "common/result.h"
#include "controller/change_set.h"

namespace gpurent::store {

// The migration entry that creates the tables.
extern const char* const kMonitoringMigration;

Status write_monitoring(sqlite3* db, const controller::MonitoringChanges& changes);
Status load_monitoring(sqlite3* db, controller::MonitoringSnapshot& out);

}  // namespace gpurent::store
