// reservation create, ls, cancel and reserve: GPUs booked ahead for a window or a reserved term,
// paid when booked (billing/reserved.h); quota show, set: a tenant's limits and fair-share weight.
#include <fmt/format.h>

#include <CLI/App.hpp>
#include <array>
#include <charconv>
#include <map>
#include <memory>
#include <optional>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/views.h"

namespace gpurent::cli {
namespace {

struct ReservationOptions {
  std::string gpu;
  int count = 0;
  std::string start = "now";
  std::string end;
  std::string duration;
  std::optional<int> days;
  bool monthly = false;
  std::string tenant;
  bool yes = false;  // book without asking to confirm the charge
};

// "now", "+DURATION" from now (+1h, +30m), or an RFC 3339 UTC time.
Result<Timestamp> parse_time(std::string_view flag, std::string_view text, Timestamp now) {
  if (text == "now") return now;
  if (text.starts_with('+')) {
    auto seconds = parse_duration_seconds(text.substr(1));
    if (!seconds) {
      return fail(usage_error(fmt::format("{} '{}': {}", flag, text, seconds.error().message)));
    }
    return now + std::chrono::seconds(*seconds);
  }
  const auto parsed = parse_rfc3339(text);
  if (!parsed) {
    return fail(usage_error(fmt::format(
        "{} '{}' is not now, +DURATION (+1h) or an RFC 3339 UTC time (e.g. 2026-11-30T15:00:00Z)",
        flag, text)));
  }
  return *parsed;
}

// The window from --start and one of --end, --duration or --days (a reserved term).
Result<api::ReservationCreate> reservation_request(const ReservationOptions& options,
                                                   Timestamp now) {
  if (!options.end.empty() + !options.duration.empty() + options.days.has_value() != 1) {
    return fail(usage_error("give one of --end, --duration or --days"));
  }
  api::ReservationCreate request{
      .tenant_id = options.tenant.empty() ? std::nullopt : std::optional(options.tenant),
      .gpu_type = options.gpu,
      .gpu_count = options.count,
      .term_days = options.days};
  if (options.monthly) request.payment = model::ReservationPayment::kMonthly;
  GPURENT_TRY(start, parse_time("--start", options.start, now));
  request.start = start;
  if (options.days) return request;
  if (options.duration.empty()) {
    GPURENT_TRY(end, parse_time("--end", options.end, now));
    request.end = end;
  } else {
    GPURENT_TRY(seconds, parse_duration_seconds(options.duration));
    request.end = start + std::chrono::seconds(seconds);
  }
  return request;
}

// The booking flags of `reservation create` and `reserve`; the term is paid when booked.
void add_booking(CLI::App& command, Context& ctx) {
  auto options = std::make_shared<ReservationOptions>();
  command.add_option("--gpu", options->gpu, "GPU type")->required();
  command.add_option("--count", options->count, "number of GPUs")->required();
  command.add_option("--start", options->start,
                     "now (the default), +DURATION from now (+1h), or an RFC 3339 UTC time");
  command.add_option("--end", options->end, "RFC 3339 UTC time");
  command.add_option("--duration", options->duration, "instead of --end: e.g. 2h, 3d");
  command.add_option("--days", options->days,
                     "instead of --end: a reserved term of this many days (7, 30, 90 earn the "
                     "price book's discounts)");
  command.add_flag("--monthly", options->monthly,
                   "pay every 30 days instead of the whole term up front");
  command.add_option("--tenant", options->tenant, "for this tenant (operators)");
  command.add_flag("-y,--yes", options->yes,
                   "book without being asked to confirm the charge (scripts: there is no "
                   "terminal to ask)");
  command.callback([&ctx, options] {
    ctx.set_command([&ctx, options]() -> Status {
      GPURENT_TRY(request, reservation_request(*options, ctx.now()));
      GPURENT_TRY(api, ctx.api());
      // The booking is paid when made: say what it costs, and book only if that is agreed.
      if (!options->yes) {
        GPURENT_TRY(quote, api->reservations().quote(request));
        GPURENT_CHECK(ctx.confirm(reservation_quote_text(quote.value), "--yes"));
      }
      return ctx.show(api->reservations().create(request),
                      [&ctx](const auto& value) { return reservation_view(value, ctx.now()); });
    });
  });
}

void add_reservation_verbs(CLI::App& reservations, Context& ctx) {
  add_booking(*reservations.add_subcommand(
                  "create",
                  "Book GPUs for a window, paid when booked: create --gpu h100-80g --count 8 "
                  "--start ... --duration 2h"),
              ctx);

  ctx.add_watch_option(*reservations.add_subcommand("ls", "List reservations")->callback([&ctx] {
    ctx.set_command([&ctx] {
      return ctx.call_and_show(
          [](client::ApiClient& api) { return api.reservations().list(); },
          [&ctx](const auto& value) { return reservations_view(value, ctx.now()); });
    });
  }));

  auto id = std::make_shared<std::string>();
  auto* cancel = reservations.add_subcommand("cancel", "Cancel a reservation");
  cancel->add_option("id", *id, "reservation id")->required();
  cancel->callback([&ctx, id] {
    ctx.set_command([&ctx, id] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.reservations().cancel(*id); },
          [&ctx](const auto& value) { return reservation_view(value, ctx.now()); });
    });
  });
}

struct QuotaOptions {
  std::string tenant;
  std::vector<std::string> max_gpus;  // type=n or type=none
  // The single-count limits, each n or none: max_instances, max_queued, max_array,
  // max_body_bytes (by their API names).
  std::map<std::string, std::string> limits;
  std::optional<int> weight;
};

// The quota's single-count limits: the API's name, the CLI's flag, what it limits, and its member.
struct CountLimit {
  const char* field;
  const char* flag;
  const char* help;
  std::optional<int> api::QuotaSet::*member;
};
constexpr std::array kCountLimits = {
    CountLimit{"max_instances", "--max-instances",
               "instances holding GPUs at once (job members count; more wait); none lifts it",
               &api::QuotaSet::max_instances},
    CountLimit{"max_queued", "--max-queued",
               "instances and job tasks waiting at once (more are refused); none lifts it",
               &api::QuotaSet::max_queued},
    CountLimit{"max_array", "--max-array", "tasks in one job array; none lifts it",
               &api::QuotaSet::max_array},
    CountLimit{"max_body_bytes", "--max-body-bytes",
               "bytes of one request's body (the server's limit still applies); none lifts it",
               &api::QuotaSet::max_body_bytes},
};

// "none" lifts a limit (nullopt); otherwise a count >= 0.
Result<std::optional<int>> parse_limit(std::string_view flag, std::string_view text) {
  if (text == "none") return std::optional<int>();
  int value = -1;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < 0) {
    return fail(usage_error(fmt::format("{} '{}' is not a count or none", flag, text)));
  }
  return std::optional<int>(value);
}

// Applies the flags to the quota the server has, so that `quota set T --weight 2` keeps the
// limits it does not name (PUT replaces the whole quota).
Result<api::QuotaSet> updated_quota(const api::Quota& current, const QuotaOptions& options) {
  api::QuotaSet quota{.max_gpus_per_type = current.max_gpus_per_type,
                      .max_instances = current.max_instances,
                      .max_queued = current.max_queued,
                      .max_array = current.max_array,
                      .max_body_bytes = current.max_body_bytes,
                      .weight = current.weight};
  for (const auto& limit : options.max_gpus) {
    const auto equals = limit.find('=');
    if (equals == 0 || equals == std::string::npos) {
      return fail(usage_error(fmt::format("--max-gpus '{}' is not type=count", limit)));
    }
    const std::string type = limit.substr(0, equals);
    GPURENT_TRY(count, parse_limit("--max-gpus", std::string_view(limit).substr(equals + 1)));
    if (count) {
      quota.max_gpus_per_type[type] = *count;
    } else {
      quota.max_gpus_per_type.erase(type);
    }
  }
  for (const CountLimit& limit : kCountLimits) {
    const auto given = options.limits.find(limit.field);
    if (given == options.limits.end()) continue;
    GPURENT_TRY(count, parse_limit(limit.flag, given->second));
    quota.*limit.member = count;
  }
  if (options.weight) quota.weight = options.weight;
  return quota;
}

Status set_quota(Context& ctx, const QuotaOptions& options) {
  GPURENT_TRY(api, ctx.api());
  GPURENT_TRY(current, api->access().get_quota(options.tenant));
  GPURENT_TRY(quota, updated_quota(current.value, options));
  return ctx.show(api->access().set_quota(options.tenant, quota), quota_view);
}

void add_quota_verbs(CLI::App& quota, Context& ctx) {
  auto tenant = std::make_shared<std::string>();
  auto* show = quota.add_subcommand("show", "A tenant's limits and weight");
  show->add_option("tenant", *tenant, "tenant id")->required();
  show->callback([&ctx, tenant] {
    ctx.set_command([&ctx, tenant] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.access().get_quota(*tenant); }, quota_view);
    });
  });

  auto options = std::make_shared<QuotaOptions>();
  auto* set = quota.add_subcommand(
      "set", "Change a tenant's limits (operators); limits not named stay as they are");
  set->add_option("tenant", options->tenant, "tenant id")->required();
  set->add_option("--max-gpus", options->max_gpus,
                  "type=count: GPUs of the type held at once; type=none lifts it; repeat");
  for (const CountLimit& limit : kCountLimits) {
    set->add_option_function<std::string>(
        limit.flag,
        [options, field = limit.field](const std::string& value) {
          options->limits[field] = value;
        },
        limit.help);
  }
  set->add_option("--weight", options->weight, "share of contended capacity (1..)")
      ->check(CLI::PositiveNumber);
  set->callback(
      [&ctx, options] { ctx.set_command([&ctx, options] { return set_quota(ctx, *options); }); });
}

}  // namespace

void add_reservation_commands(CLI::App& app, Context& ctx) {
  auto* reservations =
      app.add_subcommand("reservation", "GPUs booked ahead for a time window")->group("Jobs");
  reservations->alias("reservations");
  reservations->require_subcommand(1);
  add_reservation_verbs(*reservations, ctx);
  add_booking(*app.add_subcommand("reserve",
                                  "Commit to GPUs for a term at a discount: reserve --gpu "
                                  "h100-80g --count 8 --days 30 [--monthly]")
                   ->group("Jobs"),
              ctx);

  auto* quota = app.add_subcommand("quota", "Tenant quotas and fair-share weights")->group("Jobs");
  quota->require_subcommand(1);
  add_quota_verbs(*quota, ctx);
}

}  // namespace gpurent::cli
