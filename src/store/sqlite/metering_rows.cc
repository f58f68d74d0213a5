#include "store/sqlite/metering_rows.h"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/json.h"
#include "model/codec.h"
#include "store/sqlite/statement.h"

namespace gpurent::store {
namespace {

using namespace sqlite_statement;

// Calls whole(i) for each element of a whole-form vector of `size` and packed(row) for each
// packed row, in the order they were made: a packed row at position p comes before whole
// element p.
template <class Packed, class Whole, class OnePacked>
Status in_order(size_t size, const std::vector<Packed>& rows, Whole whole, OnePacked packed) {
  auto row = rows.begin();
  for (size_t i = 0; i <= size; ++i) {
    for (; row != rows.end() && row->position <= i; ++row) GPURENT_CHECK(packed(*row));
    if (i < size) GPURENT_CHECK(whole(i));
  }
  return {};
}

}  // namespace

Status write_usage_records(sqlite3* db, const controller::ChangeSet& c) {
  if (c.usage.empty() && c.metered_usage.empty()) return {};
  GPURENT_TRY(upsert, prepare(db,
                              "INSERT INTO usage_records (id, tenant_id, body) VALUES (?,?,?) "
                              "ON CONFLICT(id) DO UPDATE SET tenant_id=excluded.tenant_id, "
                              "body=excluded.body"));
  // The names are the codec's (model/codec.cc); the store's round-trip test holds them together.
  GPURENT_TRY(update,
              prepare(db,
                      "UPDATE usage_records SET body = json_set(body, '$.price_per_gpu_hour', ?2, "
                      "'$.metered_until', ?3, '$.billed_seconds', ?4, '$.charged', ?5, "
                      "'$.segment_rate', ?6, '$.segment_seconds', ?7, '$.segment_charged', ?8, "
                      "'$.package_seconds', ?9) WHERE id = ?1"));
  std::string body;
  const auto whole = [&](size_t i) -> Status {
    const model::UsageRecord& usage = c.usage[i];
    body = model::usage_record_json(usage);
    sqlite3_stmt* s = upsert.get();
    sqlite3_reset(s);
    bind_text(s, 1, usage.id);
    bind_text(s, 2, usage.tenant_id);
    bind_text(s, 3, body);
    if (sqlite3_step(s) != SQLITE_DONE)
      return fail(db_error(db, fmt::format("write {}", usage.id)));
    return {};
  };
  const auto packed = [&](const controller::MeteredUsage& row) -> Status {
    sqlite3_stmt* s = update.get();
    sqlite3_reset(s);
    bind_text(s, 1, c.usage_id(row));
    sqlite3_bind_int64(s, 2, row.price_per_gpu_hour);
    sqlite3_bind_int64(s, 3, to_unix_ms(row.metered_until));
    sqlite3_bind_int64(s, 4, row.billed_seconds);
    sqlite3_bind_int64(s, 5, row.charged);
    sqlite3_bind_int64(s, 6, row.segment_rate);
    sqlite3_bind_int64(s, 7, row.segment_seconds);
    sqlite3_bind_int64(s, 8, row.segment_charged);
    sqlite3_bind_int64(s, 9, row.package_seconds);
    if (sqlite3_step(s) != SQLITE_DONE) {
      return fail(db_error(db, fmt::format("write {}", c.usage_id(row))));
    }
    if (sqlite3_changes(db) != 1) {
      return fail(Error::internal(
          fmt::format("usage record {} was metered before it was stored", c.usage_id(row))));
    }
    return {};
  };
  return in_order(c.usage.size(), c.metered_usage, whole, packed);
}

Status append_transfers(sqlite3* db, const controller::ChangeSet& c) {
  if (c.transfers.empty() && c.usage_charges.empty()) return {};
  GPURENT_TRY(insert, prepare(db,
                              "INSERT INTO ledger_transfers (id, at_ms, from_account, to_account, "
                              "amount_micros, kind, tenant_id, reference) "
                              "VALUES (?,?,?,?,?,?,?,?)"));
  sqlite3_stmt* s = insert.get();
  const auto write = [&](const model::Transfer& t) -> Status {
    sqlite3_reset(s);
    bind_text(s, 1, t.id);
    sqlite3_bind_int64(s, 2, to_unix_ms(t.at));
    bind_text(s, 3, t.from_account);
    bind_text(s, 4, t.to_account);
    sqlite3_bind_int64(s, 5, t.amount);
    bind_text(s, 6, model::to_string(t.kind));
    bind_text(s, 7, t.tenant_id);
    bind_text(s, 8, t.reference);
    if (sqlite3_step(s) != SQLITE_DONE) {
      return fail(db_error(db, fmt::format("append ledger transfer {}", t.id)));
    }
    return {};
  };
  // A packed charge comes unpacked, by the one function that builds a usage charge's transfer
  // (billing::usage_transfer): its row cannot differ from the whole form's.
  return c.for_each_transfer(write);
}

}  // namespace gpurent::store
