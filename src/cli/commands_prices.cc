// prices show|set|history|spot (the price book and the spot market) and estimate (what a launch
// would cost per hour, with the same flags as launch).
#include <fmt/format.h>

#include <CLI/App.hpp>
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <memory>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/launch_options.h"
#include "cli/output.h"
#include "cli/views.h"

namespace gpurent::cli {
namespace {

int64_t integer(const Json& object, std::string_view key) {
  if (!object.is_object()) return 0;
  const auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

// A price of the book, "CNY 18.00/GPU-h" (format_price: finer than a cent, it keeps its digits).
std::string money(const Json& object, std::string_view key, std::string_view currency,
                  std::string_view per) {
  if (!object.is_object() || !object.contains(key) || !object.at(key).is_number_integer()) {
    return "-";
  }
  return format_price(object.at(key).get<Micros>(), sanitize(currency), per);
}

// "7 d: 10 % off, 30 d: 20 % off" from {"7": 100, "30": 200}, shortest term first.
std::string reserved_terms(const Json& v) {
  const auto it = v.find("reserved_discount_permille");
  if (it == v.end() || !it->is_object() || it->empty()) return "no discounts";
  std::vector<std::pair<int, std::string>> terms;
  for (const auto& [days, permille] : it->items()) {
    terms.emplace_back(
        std::atoi(days.c_str()),
        fmt::format(
            "{} d: {} off", sanitize(days),
            format_permille_percent(permille.is_number_integer() ? permille.get<int64_t>() : 0)));
  }
  std::sort(terms.begin(), terms.end());
  std::string out;
  for (const auto& [days, text] : terms) out += (out.empty() ? "" : ", ") + text;
  return out;
}

// The built-in price book is in force from the start of time: said so, not as 1970-01-01.
std::string effective_at(const Json& v) {
  const std::string at = field_text(v, "effective_at");
  return at.starts_with("1970-01-01T00:00:00") ? "always (the built-in price book)" : at;
}

std::string version_view(const Json& v) {
  const std::string currency = field_text(v, "currency");
  std::string text = render_fields({
      {"Version", field_text(v, "version")},
      {"Effective at", effective_at(v)},
      {"Set at", field_text(v, "set_at")},
      {"CPU", money(v, "cpu_per_core_hour_micros", currency, "core-h")},
      {"Memory", money(v, "memory_per_gb_hour_micros", currency, "GB-h")},
      {"Disk", money(v, "disk_per_gb_hour_micros", currency, "GB-h") + " while running"},
      {"Storage", money(v, "storage_per_gb_month_micros", currency, "GB-month")},
      {"Egress", money(v, "egress_per_gb_micros", currency, "GB")},
      {"Minimum", fmt::format("{} s per start", integer(v, "minimum_billed_seconds"))},
      {"Spot floor",
       fmt::format("{} of on-demand", format_permille_percent(integer(v, "spot_floor_permille")))},
      {"Reserved terms", reserved_terms(v)},
  });
  Table gpus({"GPU TYPE", "ON-DEMAND PER GPU-HOUR"});
  if (const auto it = v.find("gpu_per_hour_micros"); it != v.end() && it->is_object()) {
    for (const auto& [type, price] : it->items()) {
      gpus.add_row({type, money(*it, type, currency, "GPU-h")});
    }
  }
  return text + "\n" + gpus.render();
}

std::string prices_view(const Json& prices) {
  std::string text = version_view(prices.value("current", Json::object()));
  const Json upcoming = prices.value("upcoming", Json::array());
  for (const auto& v : upcoming) {
    text += fmt::format("\nUpcoming version {} from {}\n", field_text(v, "version"),
                        field_text(v, "effective_at"));
  }
  return text;
}

std::string history_view(const Json& items) {
  Table table({"VERSION", "EFFECTIVE AT", "SET AT", "GPU TYPES", "MINIMUM", "SPOT FLOOR"});
  for (const auto& v : items) {
    const auto gpus = v.value("gpu_per_hour_micros", Json::object());
    table.add_row({field_text(v, "version"), effective_at(v), field_text(v, "set_at"),
                   std::to_string(gpus.size()),
                   fmt::format("{} s", integer(v, "minimum_billed_seconds")),
                   format_permille_percent(integer(v, "spot_floor_permille"))});
  }
  return table.render();
}

std::string spot_view(const Json& body) {
  const std::string currency = field_text(body, "currency");
  Table table({"GPU TYPE", "AT", "PRICE", "UTILISATION"});
  Table now({"GPU TYPE", "NOW", "FLOOR", "CAP"});
  for (const auto& type : body.value("items", Json::array())) {
    now.add_row({field_text(type, "gpu_type"),
                 money(type, "current_per_gpu_hour_micros", currency, "GPU-h"),
                 money(type, "floor_per_gpu_hour_micros", currency, "GPU-h"),
                 money(type, "cap_per_gpu_hour_micros", currency, "GPU-h")});
    for (const auto& point : type.value("points", Json::array())) {
      table.add_row({field_text(point, "gpu_type"), field_text(point, "at"),
                     money(point, "price_per_gpu_hour_micros", currency, "GPU-h"),
                     format_permille_percent(integer(point, "utilisation_permille"))});
    }
  }
  return now.render() + "\n" + table.render();
}

std::string estimate_view(const Json& e) {
  const std::string currency = field_text(e, "currency");
  const Json per_hour = e.value("per_hour_micros", Json::object());
  Fields fields = {
      {"GPU type", field_text(e, "gpu_type")},
      {"Pricing", field_text(e, "pricing")},
      {"GPU price", money(e, "gpu_price_per_gpu_hour_micros", currency, "GPU-h")},
      {"GPU", money(per_hour, "gpu", currency, "h")},
      {"CPU", money(per_hour, "cpu", currency, "h")},
      {"Memory", money(per_hour, "memory", currency, "h")},
      {"Disk", money(per_hour, "disk", currency, "h")},
      {"Total", money(per_hour, "total", currency, "h")},
      {"Stopped", money(e, "stopped_storage_per_hour_micros", currency, "h") + " for the disk"},
      {"Minimum",
       fmt::format("{} s per start, {}", integer(e, "minimum_billed_seconds"),
                   format_money(integer(e, "minimum_charge_micros"), sanitize(currency)))},
  };
  if (const auto spot = e.find("spot"); spot != e.end() && spot->is_object()) {
    fields.push_back(
        {"Spot range",
         fmt::format("{} .. {}", money(*spot, "floor_per_gpu_hour_micros", currency, "GPU-h"),
                     money(*spot, "cap_per_gpu_hour_micros", currency, "GPU-h"))});
    fields.push_back({"Spot now", money(*spot, "current_per_gpu_hour_micros", currency, "GPU-h")});
  }
  return render_fields(fields);
}

struct SetOptions {
  std::string effective_at;
  std::vector<std::string> gpu;  // TYPE=PRICE
  std::vector<std::string> unprice;
  std::string cpu, memory, disk, storage, egress;
  int64_t minimum_seconds = 0;
  int64_t spot_floor_permille = 0;
  std::vector<std::string> reserved;  // DAYS=PERMILLE
  // Whether those two were given (any value, even a wrong one, goes to the server to judge).
  CLI::Option* minimum_flag = nullptr;
  CLI::Option* spot_floor_flag = nullptr;
  bool in_micros = false;
};

Result<Json> change_body(const SetOptions& options) {
  Json body = Json::object();
  if (!options.effective_at.empty()) body["effective_at"] = options.effective_at;
  Json gpus = Json::object();
  for (const auto& assignment : options.gpu) {
    const auto equals = assignment.find('=');
    if (equals == 0 || equals == std::string::npos) {
      return fail(usage_error(fmt::format("--gpu '{}' is not TYPE=PRICE", assignment)));
    }
    GPURENT_TRY(price, parse_amount(assignment.substr(equals + 1), options.in_micros));
    gpus[assignment.substr(0, equals)] = price;
  }
  for (const auto& type : options.unprice) gpus[type] = nullptr;
  if (!gpus.empty()) body["gpu_per_hour_micros"] = std::move(gpus);
  const std::pair<const std::string*, const char*> amounts[] = {
      {&options.cpu, "cpu_per_core_hour_micros"},
      {&options.memory, "memory_per_gb_hour_micros"},
      {&options.disk, "disk_per_gb_hour_micros"},
      {&options.storage, "storage_per_gb_month_micros"},
      {&options.egress, "egress_per_gb_micros"}};
  for (const auto& [text, key] : amounts) {
    if (text->empty()) continue;
    GPURENT_TRY(value, parse_amount(*text, options.in_micros));
    body[key] = value;
  }
  if (options.minimum_flag->count() > 0) body["minimum_billed_seconds"] = options.minimum_seconds;
  if (options.spot_floor_flag->count() > 0) {
    body["spot_floor_permille"] = options.spot_floor_permille;
  }
  if (!options.reserved.empty()) {
    Json terms = Json::object();
    for (const auto& assignment : options.reserved) {
      const auto equals = assignment.find('=');
      const char* end = assignment.data() + assignment.size();
      int64_t permille = 0;
      if (equals == 0 || equals == std::string::npos ||
          std::from_chars(assignment.data() + equals + 1, end, permille) !=
              std::from_chars_result{end, std::errc()}) {
        return fail(
            usage_error(fmt::format("--reserved-discount '{}' is not DAYS=PERMILLE", assignment)));
      }
      terms[assignment.substr(0, equals)] = permille;
    }
    body["reserved_discount_permille"] = std::move(terms);
  }
  return body;
}

}  // namespace

void add_price_commands(CLI::App& app, Context& ctx) {
  auto* prices =
      app.add_subcommand("prices", "The price book and the spot market")->group("Billing");
  prices->require_subcommand(1);

  auto* show = prices->add_subcommand("show", "The prices in force now, and upcoming versions");
  show->callback([&ctx] {
    ctx.set_command([&ctx] {
      return ctx.call_and_show([](client::ApiClient& api) { return api.billing().prices(); },
                               prices_view);
    });
  });

  auto options = std::make_shared<SetOptions>();
  auto* set = prices->add_subcommand(
      "set", "Set prices from now or a later time (operators); what is not given is kept");
  set->add_option("--effective-at", options->effective_at,
                  "RFC 3339 time it takes effect (default: now; never in the past)");
  set->add_option("--gpu", options->gpu, "TYPE=PRICE per GPU-hour, e.g. h100-80g=18; repeat")
      ->allow_extra_args(false);
  set->add_option("--unprice", options->unprice, "take a GPU type's price away; repeat")
      ->allow_extra_args(false);
  set->add_option("--cpu", options->cpu, "per core-hour");
  set->add_option("--memory", options->memory, "per GB-hour");
  set->add_option("--disk", options->disk, "per GB-hour of a running instance's disk");
  set->add_option("--storage", options->storage, "per GB-month: stopped disks and volumes");
  set->add_option("--egress", options->egress, "per GB");
  options->minimum_flag =
      set->add_option("--minimum", options->minimum_seconds, "minimum billed seconds per start");
  options->spot_floor_flag = set->add_option("--spot-floor", options->spot_floor_permille,
                                             "spot floor in per mille of on-demand (0..1000)");
  set->add_option("--reserved-discount", options->reserved,
                  "DAYS=PERMILLE: reserved terms of at least DAYS days get PERMILLE off "
                  "on-demand; repeat; replaces the whole table")
      ->allow_extra_args(false);
  set->add_flag("--micros", options->in_micros, "amounts are in micro-units");
  set->callback([&ctx, options] {
    ctx.set_command([&ctx, options]() -> Status {
      GPURENT_TRY(body, change_body(*options));
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.billing().set_prices(body); }, version_view);
    });
  });

  auto* history = prices->add_subcommand("history", "Every version of the price book");
  history->callback([&ctx] {
    ctx.set_command([&ctx] {
      return ctx.call_and_show([](client::ApiClient& api) { return api.billing().price_history(); },
                               history_view);
    });
  });

  struct SpotOptions {
    std::string gpu, from, to;
  };
  auto spot_options = std::make_shared<SpotOptions>();
  auto* spot = prices->add_subcommand("spot", "Spot prices now and their history");
  spot->add_option("--gpu", spot_options->gpu, "one GPU type (default: all priced types)");
  spot->add_option("--from", spot_options->from, "RFC 3339 (default: a day ago)");
  spot->add_option("--to", spot_options->to, "RFC 3339 (default: now)");
  spot->callback([&ctx, spot_options] {
    ctx.set_command([&ctx, spot_options] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) {
            return api.billing().spot_prices(spot_options->gpu, spot_options->from,
                                             spot_options->to);
          },
          spot_view);
    });
  });

  auto launch = std::make_shared<LaunchOptions>();
  auto* estimate = app.add_subcommand(
      "estimate", "What a launch would cost per hour (the flags of launch); creates nothing");
  estimate->group("Billing");
  add_launch_options(*estimate, *launch);
  estimate->callback([&ctx, launch] {
    ctx.set_command([&ctx, launch]() -> Status {
      GPURENT_TRY(request, launch_request(*launch));
      return ctx.call_and_show(
          [&](client::ApiClient& api) {
            return api.billing().estimate(request.spec, request.runtime);
          },
          estimate_view);
    });
  });
}

}  // namespace gpurent::cli
