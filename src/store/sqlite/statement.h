// Prepared-statement helpers shared by the SQLite store's table writers (monitoring_tables.cc,
// metering_rows.cc): an owning statement handle, SQLite's error as an Error, and text binding.
#pragma once

#include <fmt/format.h>
#include <sqlite3.h>

#include <memory>
#include <string_view>

#include "common/result.h"

namespace gpurent::store::sqlite_statement {

struct Finalize {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, Finalize>;

inline Error db_error(sqlite3* db, std::string_view what) {
  return Error::internal(fmt::format("sqlite: {}: {}", what, sqlite3_errmsg(db)));
}

inline Result<Stmt> prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) !=
      SQLITE_OK) {
    sqlite3_finalize(stmt);
    return fail(db_error(db, fmt::format("prepare {}", sql)));
  }
  return Stmt(stmt);
}

// Named apart from std::bind, which ADL would prefer for a std::string argument. The text is
// copied (SQLITE_TRANSIENT): callers bind temporaries.
inline void bind_text(sqlite3_stmt* stmt, int index, std::string_view text) {
  sqlite3_bind_text(stmt, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

}  // namespace gpurent::store::sqlite_statement
