// Moving and backing up a whole store: `gpurent store migrate` (SQLite to PostgreSQL, or back)
// and `gpurent backup` (a consistent online copy of either, into a new SQLite file).
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "store/store.h"

namespace gpurent::store {

// Opens the store a command line names: "postgres://..." (or postgresql://), or "sqlite:PATH"
// where PATH is a server's data directory (its gpurent.db) or a database file. Errors
// "invalid_store" for anything else.
Result<std::unique_ptr<Store>> open_store_named(const std::string& name);

struct CopyReport {
  size_t tenants = 0;
  size_t instances = 0;
  size_t transfers = 0;
  size_t events = 0;
};

// Copies every row of `from`, read in one consistent view (servers may go on writing to it), into
// `to` in one transaction. `to` must hold nothing yet (Error "store_not_empty"): a copy never
// merges into a live installation.
Result<CopyReport> copy_store(Store& from, Store& to);

}  // namespace gpurent::store
