#include "store/copy.h"

#include <fmt/format.h>

#include <filesystem>

namespace gpurent::store {
namespace {

// Counts what a copy moves, for its report, and passes every row on.
class CountingWriter final : public RowWriter {
 public:
  CountingWriter(RowWriter& to, CopyReport& report) : to_(to), report_(report) {}
  Status upsert(ObjectTable table, std::string_view id, std::string_view tenant_id,
                std::string_view body) override {
    if (table == ObjectTable::kTenants) ++report_.tenants;
    if (table == ObjectTable::kInstances) ++report_.instances;
    return to_.upsert(table, id, tenant_id, body);
  }
  Status remove(ObjectTable table, std::string_view id) override { return to_.remove(table, id); }
  Status upsert_task(std::string_view job_id, const model::JobTask& task,
                     std::string_view members_json) override {
    return to_.upsert_task(job_id, task, members_json);
  }
  Status update_metered_usage(std::string_view id,
                              const std::array<MeteredField, 8>& fields) override {
    return to_.update_metered_usage(id, fields);
  }
  Status append_transfer(const model::Transfer& transfer) override {
    ++report_.transfers;
    return to_.append_transfer(transfer);
  }
  Status append_event(const model::Event& event) override {
    ++report_.events;
    return to_.append_event(event);
  }
  Status append_audit(int64_t seq, int64_t at_ms, std::string_view tenant_id,
                      std::string_view body) override {
    return to_.append_audit(seq, at_ms, tenant_id, body);
  }
  Status put_spot_price(std::string_view gpu_type, int64_t at_ms, std::string_view body) override {
    return to_.put_spot_price(gpu_type, at_ms, body);
  }
  Status prune_spot_prices(std::string_view gpu_type, int keep) override {
    return to_.prune_spot_prices(gpu_type, keep);
  }
  Status put_rollup(const monitor::RollupRow& row) override { return to_.put_rollup(row); }
  Status prune_rollups(monitor::Resolution resolution, int64_t before_ms) override {
    return to_.prune_rollups(resolution, before_ms);
  }
  Status put_alert_rule(std::string_view name, std::string_view body) override {
    return to_.put_alert_rule(name, body);
  }
  Status remove_alert_rule(std::string_view name) override { return to_.remove_alert_rule(name); }
  Status append_alert(int64_t seq, std::string_view body) override {
    return to_.append_alert(seq, body);
  }
  Status trim_alerts(int64_t up_to_seq) override { return to_.trim_alerts(up_to_seq); }
  Status rewrite_alert(int64_t seq, std::string_view body) override {
    return to_.rewrite_alert(seq, body);
  }

 private:
  RowWriter& to_;
  CopyReport& report_;
};

// Whether a store holds anything a server wrote: every server's first commit makes a tenant.
Result<bool> is_empty(Store& store) {
  bool empty = true;
  GPURENT_CHECK(store.read_rows([&](RowReader& rows) -> Status {
    GPURENT_CHECK(rows.objects(ObjectTable::kTenants,
                               [&](std::string_view, std::string_view, std::string_view) {
                                 empty = false;
                                 return Status();
                               }));
    return rows.transfers([&](const TransferColumns&) {
      empty = false;
      return Status();
    });
  }));
  return empty;
}

}  // namespace

Result<std::unique_ptr<Store>> open_store_named(const std::string& name) {
  if (is_postgres_url(name)) return open_postgres_store(name);
  constexpr std::string_view kSqlite = "sqlite:";
  if (!name.starts_with(kSqlite) || name.size() == kSqlite.size()) {
    return fail(Error::invalid(
        "invalid_store",
        fmt::format("'{}' names no store: use sqlite:DATA_DIR, sqlite:FILE.db or postgres://...",
                    name)));
  }
  std::filesystem::path path = name.substr(kSqlite.size());
  if (std::filesystem::is_directory(path)) path /= "gpurent.db";
  return open_sqlite_store(path.string());
}

Result<CopyReport> copy_store(Store& from, Store& to) {
  GPURENT_TRY(empty, is_empty(to));
  if (!empty) {
    return fail(Error::conflict("store_not_empty",
                                "the destination already holds a control plane's state: a copy "
                                "goes only into an empty store"));
  }
  CopyReport report;
  GPURENT_CHECK(from.read_rows([&](RowReader& rows) {
    return to.write_rows([&](RowWriter& writer) {
      CountingWriter counting(writer, report);
      return copy_rows(rows, counting);
    });
  }));
  return report;
}

}  // namespace gpurent::store
