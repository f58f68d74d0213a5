#include "store/rows.h"

#include <fmt/format.h>

#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "billing/spot_market.h"
#include "common/json.h"
#include "common/json_writer.h"
#include "model/codec.h"
#include "monitor/alerts_json.h"

namespace gpurent::store {

std::string_view table_name(ObjectTable table) {
  static constexpr std::array<std::string_view, kObjectTableCount> kNames = {
      "tenants",        "api_keys",
      "join_tokens",    "nodes",
      "instances",      "jobs",
      "reservations",   "quotas",
      "templates",      "usage_records",
      "volumes",        "idempotency_keys",
      "price_versions", "package_products",
      "packages",       "balance_settings",
      "downtime",       "gpu_quarantines",
      "gpu_benchmarks"};
  return kNames[static_cast<size_t>(table)];
}

std::array<MeteredField, 8> metered_fields(const controller::MeteredUsage& row) {
  return {{{"price_per_gpu_hour", row.price_per_gpu_hour},
           {"metered_until", to_unix_ms(row.metered_until)},
           {"billed_seconds", row.billed_seconds},
           {"charged", row.charged},
           {"segment_rate", row.segment_rate},
           {"segment_seconds", row.segment_seconds},
           {"segment_charged", row.segment_charged},
           {"package_seconds", row.package_seconds}}};
}

namespace {

// Objects are keyed by their id; a quota or balance setting, one per tenant, by its tenant; a
// package product by its name.
template <class T>
const std::string& object_id(const T& object) {
  if constexpr (requires { object.id; }) {
    return object.id;
  } else if constexpr (requires { object.name; }) {
    return object.name;
  } else {
    return object.tenant_id;
  }
}

// The tenant column: the owner's id, empty for the platform's objects.
template <class T>
std::string_view tenant_of(const T& object) {
  if constexpr (std::is_same_v<T, model::Tenant>) {
    return object.id;
  } else if constexpr (std::is_same_v<T, model::JoinToken> || std::is_same_v<T, model::Node> ||
                       std::is_same_v<T, model::PackageProduct> ||
                       std::is_same_v<T, model::GpuQuarantine> ||
                       std::is_same_v<T, model::GpuBenchmarkHistory>) {
    return {};
  } else {
    return object.tenant_id;
  }
}

template <class T>
Status upsert_all(RowWriter& writer, ObjectTable table, const std::vector<T>& objects) {
  for (const auto& object : objects) {
    if constexpr (std::is_same_v<T, model::Instance>) {
      // The most written kind: serialized without building a JSON tree first.
      GPURENT_CHECK(
          writer.upsert(table, object.id, object.tenant_id, model::instance_row_json(object)));
    } else {
      GPURENT_CHECK(
          writer.upsert(table, object_id(object), tenant_of(object), Json(object).dump()));
    }
  }
  return {};
}

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

Status write_usage(const controller::ChangeSet& c, RowWriter& writer) {
  return in_order(
      c.usage.size(), c.metered_usage,
      [&](size_t i) {
        const model::UsageRecord& usage = c.usage[i];
        return writer.upsert(ObjectTable::kUsageRecords, usage.id, usage.tenant_id,
                             model::usage_record_json(usage));
      },
      [&](const controller::MeteredUsage& row) {
        return writer.update_metered_usage(c.usage_id(row), metered_fields(row));
      });
}

Status write_spot_prices(const std::vector<model::SpotPricePoint>& points, RowWriter& writer) {
  std::set<std::string_view> types;
  for (const auto& point : points) {
    GPURENT_CHECK(writer.put_spot_price(point.gpu_type, to_unix_ms(point.at), Json(point).dump()));
    types.insert(point.gpu_type);
  }
  // Keeps the newest points of each type, as the market does in memory.
  for (const auto type : types) {
    GPURENT_CHECK(writer.prune_spot_prices(type, billing::kMaxSpotPointsPerType));
  }
  return {};
}

// The transition (monitor/alerts_json.h) and, once acknowledged, acknowledged_by and
// acknowledged_at_ms.
std::string alert_body(const controller::AlertRecord& record) {
  Json body = monitor::transition_to_json(record.transition);
  if (record.ack) {
    body["acknowledged_by"] = record.ack->by;
    body["acknowledged_at_ms"] = record.ack->at_ms;
  }
  return body.dump();
}

// Text from outside (a node's GPU names, the process output an event quotes) may be any bytes;
// a row's text is valid UTF-8 without NUL (PostgreSQL's text refuses the rest).
bool is_clean(std::string_view text) {
  return text.find('\0') == std::string_view::npos && is_valid_utf8(text);
}
std::string cleaned(std::string_view text) {
  std::string out = replace_invalid_utf8(text);
  for (size_t at; (at = out.find('\0')) != std::string::npos;) out.replace(at, 1, "\xEF\xBF\xBD");
  return out;
}

// An audit entry's text comes from requests (paths, addresses): made clean before it is JSON.
Status write_audit(model::AuditRecord entry, RowWriter& writer) {
  for (std::string* text : {&entry.tenant_id, &entry.key_id, &entry.role, &entry.address,
                            &entry.action, &entry.target, &entry.outcome}) {
    if (!is_clean(*text)) *text = cleaned(*text);
  }
  return writer.append_audit(entry.seq, to_unix_ms(entry.at), entry.tenant_id, Json(entry).dump());
}

Status write_event(const model::Event& event, RowWriter& writer) {
  if (is_clean(event.tenant_id) && is_clean(event.object_id) && is_clean(event.kind) &&
      is_clean(event.message)) {
    return writer.append_event(event);
  }
  model::Event clean = event;
  for (std::string* text : {&clean.tenant_id, &clean.object_id, &clean.kind, &clean.message}) {
    *text = cleaned(*text);
  }
  return writer.append_event(clean);
}

Status write_monitoring(const controller::MonitoringChanges& c, RowWriter& writer) {
  for (const auto& row : c.rollups) {
    if (is_clean(row.gpu_uuid)) {
      GPURENT_CHECK(writer.put_rollup(row));
    } else {
      monitor::RollupRow clean = row;
      clean.gpu_uuid = cleaned(row.gpu_uuid);
      GPURENT_CHECK(writer.put_rollup(clean));
    }
  }
  if (c.prune) {
    GPURENT_CHECK(writer.prune_rollups(monitor::Resolution::kMinute, c.prune->minute_before_ms));
    GPURENT_CHECK(writer.prune_rollups(monitor::Resolution::kHour, c.prune->hour_before_ms));
  }
  for (const auto& change : c.rule_changes) {
    GPURENT_CHECK(
        change.rule ? writer.put_alert_rule(change.name, monitor::rule_to_json(*change.rule).dump())
                    : writer.remove_alert_rule(change.name));
  }
  if (!c.alert_history.empty()) {
    for (const auto& record : c.alert_history) {
      GPURENT_CHECK(writer.append_alert(record.seq, alert_body(record)));
    }
    GPURENT_CHECK(writer.trim_alerts(c.alert_history.back().seq -
                                     static_cast<int64_t>(controller::kMaxAlertHistory)));
  }
  // After the appends: a record may be appended and acknowledged in one commit. A record trimmed
  // since is not written again.
  for (const auto& record : c.acknowledged) {
    GPURENT_CHECK(writer.rewrite_alert(record.seq, alert_body(record)));
  }
  return {};
}

}  // namespace

Status write_changes(const controller::ChangeSet& c, RowWriter& writer) {
  using enum ObjectTable;
  GPURENT_CHECK(upsert_all(writer, kTenants, c.tenants));
  GPURENT_CHECK(upsert_all(writer, kApiKeys, c.api_keys));
  GPURENT_CHECK(upsert_all(writer, kJoinTokens, c.join_tokens));
  GPURENT_CHECK(upsert_all(writer, kNodes, c.nodes));
  GPURENT_CHECK(upsert_all(writer, kInstances, c.instances));
  for (const auto& row : c.instance_rows) {
    GPURENT_CHECK(writer.upsert(kInstances, row.id, row.tenant_id, row.body));
  }
  GPURENT_CHECK(upsert_all(writer, kJobs, c.jobs));
  for (const auto& change : c.job_tasks) {
    GPURENT_CHECK(
        writer.upsert_task(change.job_id, change.task, model::strings_json(change.task.members)));
  }
  GPURENT_CHECK(upsert_all(writer, kReservations, c.reservations));
  GPURENT_CHECK(upsert_all(writer, kQuotas, c.quotas));
  // In order: a template set, deleted and set again in one batch ends set.
  for (const auto& change : c.template_changes) {
    GPURENT_CHECK(change.template_
                      ? writer.upsert(kTemplates, change.name, "", Json(*change.template_).dump())
                      : writer.remove(kTemplates, change.name));
  }
  GPURENT_CHECK(write_usage(c, writer));
  GPURENT_CHECK(upsert_all(writer, kVolumes, c.volumes));
  for (const auto& record : c.idempotency) {
    GPURENT_CHECK(writer.upsert(kIdempotencyKeys, record.tenant_id + "/" + record.key,
                                record.tenant_id, Json(record).dump()));
  }
  for (const auto& event : c.events) GPURENT_CHECK(write_event(event, writer));
  for (const auto& entry : c.audit) GPURENT_CHECK(write_audit(entry, writer));
  for (const auto& version : c.price_versions) {
    GPURENT_CHECK(
        writer.upsert(kPriceVersions, std::to_string(version.version), "", Json(version).dump()));
  }
  GPURENT_CHECK(write_spot_prices(c.spot_prices, writer));
  GPURENT_CHECK(upsert_all(writer, kPackageProducts, c.package_products));
  GPURENT_CHECK(upsert_all(writer, kPackages, c.packages));
  GPURENT_CHECK(upsert_all(writer, kBalanceSettings, c.balance_settings));
  GPURENT_CHECK(upsert_all(writer, kDowntime, c.downtime));
  GPURENT_CHECK(upsert_all(writer, kGpuQuarantines, c.gpu_quarantines));
  GPURENT_CHECK(upsert_all(writer, kGpuBenchmarks, c.gpu_benchmarks));
  GPURENT_CHECK(write_monitoring(c.monitoring_changes, writer));
  // A packed charge comes unpacked, by the one function that builds a usage charge's transfer
  // (billing::usage_transfer): its row cannot differ from the whole form's.
  return c.for_each_transfer(
      [&writer](const model::Transfer& transfer) { return writer.append_transfer(transfer); });
}

namespace {

Status corrupt(std::string_view what, std::string_view why) {
  return fail(Error::internal(fmt::format("corrupt record {}: {}", what, why)));
}

// The model's forms of a task's, a transfer's and a rollup's columns.
Result<model::JobTask> task_of(const TaskColumns& row) {
  model::JobTask task{.index = row.index, .attempts = row.attempts, .exit_code = row.exit_code};
  if (!model::parse_job_state(row.state, &task.state)) {
    return fail(
        corrupt(fmt::format("job_tasks/{}/{}", row.job_id, row.index), "unknown state").error());
  }
  return task;
}

Result<model::Transfer> transfer_of(const TransferColumns& row) {
  model::Transfer t{.id = std::string(row.id),
                    .at = from_unix_ms(row.at_ms),
                    .from_account = std::string(row.from_account),
                    .to_account = std::string(row.to_account),
                    .amount = row.amount,
                    .tenant_id = std::string(row.tenant_id),
                    .reference = std::string(row.reference)};
  if (!model::parse_transfer_kind(row.kind, &t.kind)) {
    return fail(corrupt(fmt::format("ledger_transfers/{}", row.id), "unknown kind").error());
  }
  return t;
}

Result<monitor::RollupRow> rollup_of(const RollupColumns& row) {
  auto resolution = monitor::parse_resolution(row.resolution);
  auto metric = monitor::parse_metric(row.metric);
  if (!resolution || !metric) {
    return fail(corrupt("gpu_rollups", "unknown resolution or metric").error());
  }
  return monitor::RollupRow{.gpu_uuid = std::string(row.gpu_uuid),
                            .metric = *metric,
                            .resolution = *resolution,
                            .bucket_start_ms = row.bucket_start_ms,
                            .min = row.min,
                            .max = row.max,
                            .sum = row.sum,
                            .count = row.count};
}

template <class T>
Status read_objects(RowReader& reader, ObjectTable table, std::vector<T>& out) {
  return reader.objects(
      table, [&](std::string_view id, std::string_view, std::string_view body) -> Status {
        try {  // nlohmann reports a corrupt record by throwing
          out.push_back(Json::parse(body).get<T>());
        } catch (const std::exception& e) {
          return corrupt(fmt::format("{}/{}", table_name(table), id), e.what());
        }
        return {};
      });
}

// Puts each job's task rows back into it, in index order; a missing index is corruption.
Status read_tasks(RowReader& reader, std::vector<model::Job>& jobs) {
  std::unordered_map<std::string_view, model::Job*> by_id;
  for (auto& job : jobs) by_id.emplace(job.id, &job);
  GPURENT_CHECK(reader.tasks([&](const TaskColumns& row) -> Status {
    const auto what = fmt::format("job_tasks/{}/{}", row.job_id, row.index);
    const auto job = by_id.find(row.job_id);
    if (job == by_id.end()) return corrupt(what, "no such job");
    if (static_cast<size_t>(row.index) != job->second->tasks.size()) {
      return corrupt(what, "tasks are not numbered 0, 1, 2, ...");
    }
    GPURENT_TRY(task, task_of(row));
    try {  // nlohmann reports a corrupt record by throwing
      task.members = Json::parse(row.members).get<std::vector<std::string>>();
    } catch (const std::exception& e) {
      return corrupt(what, e.what());
    }
    job->second->tasks.push_back(std::move(task));
    return {};
  }));
  for (const auto& job : jobs) {
    if (job.tasks.size() != static_cast<size_t>(job.spec.array)) {
      return fail(Error::internal(fmt::format("corrupt record jobs/{}: {} of its {} tasks stored",
                                              job.id, job.tasks.size(), job.spec.array)));
    }
  }
  return {};
}

// Instances' rows are model::instance_row_json's: a job member's takes its spec from its job.
Status read_instances(RowReader& reader, const std::vector<model::Job>& jobs,
                      std::vector<model::Instance>& out) {
  std::unordered_map<std::string_view, const model::Job*> by_id;
  for (const auto& job : jobs) by_id.emplace(job.id, &job);
  const auto job_of = [&](std::string_view id) -> const model::Job* {
    const auto it = by_id.find(id);
    return it == by_id.end() ? nullptr : it->second;
  };
  return reader.objects(
      ObjectTable::kInstances,
      [&](std::string_view id, std::string_view, std::string_view body) -> Status {
        try {  // nlohmann reports a corrupt record by throwing
          out.push_back(model::instance_from_row(Json::parse(body), job_of));
        } catch (const std::exception& e) {
          return corrupt(fmt::format("instances/{}", id), e.what());
        }
        return {};
      });
}

Status read_monitoring(RowReader& reader, controller::MonitoringSnapshot& out) {
  GPURENT_CHECK(reader.rollups([&](const RollupColumns& row) -> Status {
    GPURENT_TRY(rollup, rollup_of(row));
    out.rollups.push_back(std::move(rollup));
    return {};
  }));
  GPURENT_CHECK(reader.alert_rules([&](std::string_view name, std::string_view text) -> Status {
    auto body = parse_json_object(text);
    if (!body) return corrupt(fmt::format("alert_rules/{}", name), "not a JSON object");
    auto rule = monitor::rule_from_json(*body);
    if (!rule) return corrupt(fmt::format("alert_rules/{}", name), rule.error().message);
    out.alert_rules.push_back(std::move(*rule));
    return {};
  }));
  return reader.alert_history([&](int64_t seq, std::string_view text) -> Status {
    const auto what = fmt::format("alert_history/{}", seq);
    auto body = parse_json_object(text);
    if (!body) return corrupt(what, "not a JSON object");
    GPURENT_TRY(transition, monitor::transition_from_json(*body));
    std::optional<controller::AlertAck> ack;
    if (const auto by = body->find("acknowledged_by"); by != body->end()) {
      const auto at = body->find("acknowledged_at_ms");
      if (!by->is_string() || at == body->end() || !at->is_number_integer()) {
        return corrupt(what, "an acknowledgement without its author or time");
      }
      ack = controller::AlertAck{.by = by->get<std::string>(), .at_ms = at->get<int64_t>()};
    }
    out.alert_history.push_back(
        {.seq = seq, .transition = std::move(transition), .ack = std::move(ack)});
    return {};
  });
}

}  // namespace

Result<controller::Snapshot> read_snapshot(RowReader& reader) {
  using enum ObjectTable;
  controller::Snapshot s;
  GPURENT_CHECK(read_objects(reader, kTenants, s.tenants));
  GPURENT_CHECK(read_objects(reader, kApiKeys, s.api_keys));
  GPURENT_CHECK(read_objects(reader, kJoinTokens, s.join_tokens));
  GPURENT_CHECK(read_objects(reader, kNodes, s.nodes));
  GPURENT_CHECK(read_objects(reader, kJobs, s.jobs));
  GPURENT_CHECK(read_tasks(reader, s.jobs));
  GPURENT_CHECK(read_instances(reader, s.jobs, s.instances));
  GPURENT_CHECK(read_objects(reader, kReservations, s.reservations));
  GPURENT_CHECK(read_objects(reader, kQuotas, s.quotas));
  GPURENT_CHECK(read_objects(reader, kTemplates, s.templates));
  GPURENT_CHECK(read_objects(reader, kUsageRecords, s.usage));
  GPURENT_CHECK(read_objects(reader, kVolumes, s.volumes));
  GPURENT_CHECK(read_objects(reader, kIdempotencyKeys, s.idempotency));
  GPURENT_CHECK(reader.events(model::kMaxEventsInMemory, [&](model::Event event) -> Status {
    s.events.push_back(std::move(event));
    return {};
  }));
  GPURENT_CHECK(
      reader.audit(model::kMaxAuditInMemory,
                   [&](int64_t seq, int64_t, std::string_view, std::string_view body) -> Status {
                     try {  // nlohmann reports a corrupt record by throwing
                       s.audit.push_back(Json::parse(body).get<model::AuditRecord>());
                     } catch (const std::exception& e) {
                       return corrupt(fmt::format("audit_log/{}", seq), e.what());
                     }
                     return {};
                   }));
  GPURENT_CHECK(read_objects(reader, kPriceVersions, s.price_versions));
  GPURENT_CHECK(reader.spot_prices(
      [&](std::string_view gpu_type, int64_t at_ms, std::string_view body) -> Status {
        try {  // nlohmann reports a corrupt record by throwing
          s.spot_prices.push_back(Json::parse(body).get<model::SpotPricePoint>());
        } catch (const std::exception& e) {
          return corrupt(fmt::format("spot_prices/{}/{}", gpu_type, at_ms), e.what());
        }
        return {};
      }));
  GPURENT_CHECK(read_objects(reader, kPackageProducts, s.package_products));
  GPURENT_CHECK(read_objects(reader, kPackages, s.packages));
  GPURENT_CHECK(read_objects(reader, kBalanceSettings, s.balance_settings));
  GPURENT_CHECK(read_objects(reader, kDowntime, s.downtime));
  GPURENT_CHECK(read_objects(reader, kGpuQuarantines, s.gpu_quarantines));
  GPURENT_CHECK(read_objects(reader, kGpuBenchmarks, s.gpu_benchmarks));
  GPURENT_CHECK(read_monitoring(reader, s.monitoring));
  GPURENT_CHECK(reader.transfers([&](const TransferColumns& row) -> Status {
    GPURENT_TRY(transfer, transfer_of(row));
    s.transfers.push_back(std::move(transfer));
    return {};
  }));
  return s;
}

Status copy_rows(RowReader& from, RowWriter& to) {
  for (size_t i = 0; i < kObjectTableCount; ++i) {
    const auto table = static_cast<ObjectTable>(i);
    GPURENT_CHECK(from.objects(
        table, [&](std::string_view id, std::string_view tenant_id, std::string_view body) {
          return to.upsert(table, id, tenant_id, body);
        }));
  }
  GPURENT_CHECK(from.tasks([&](const TaskColumns& row) -> Status {
    GPURENT_TRY(task, task_of(row));
    return to.upsert_task(row.job_id, task, row.members);
  }));
  GPURENT_CHECK(from.transfers([&](const TransferColumns& row) -> Status {
    GPURENT_TRY(transfer, transfer_of(row));
    return to.append_transfer(transfer);
  }));
  GPURENT_CHECK(from.events(std::numeric_limits<size_t>::max(),
                            [&](const model::Event& event) { return to.append_event(event); }));
  GPURENT_CHECK(from.audit(
      std::numeric_limits<size_t>::max(),
      [&](int64_t seq, int64_t at_ms, std::string_view tenant_id, std::string_view body) {
        return to.append_audit(seq, at_ms, tenant_id, body);
      }));
  GPURENT_CHECK(from.spot_prices([&](std::string_view type, int64_t at_ms, std::string_view body) {
    return to.put_spot_price(type, at_ms, body);
  }));
  GPURENT_CHECK(from.rollups([&](const RollupColumns& row) -> Status {
    GPURENT_TRY(rollup, rollup_of(row));
    return to.put_rollup(rollup);
  }));
  GPURENT_CHECK(from.alert_rules(
      [&](std::string_view name, std::string_view body) { return to.put_alert_rule(name, body); }));
  return from.alert_history(
      [&](int64_t seq, std::string_view body) { return to.append_alert(seq, body); });
}

}  // namespace gpurent::store
