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

// A price of the book, "CNY 18.00/GPU-h" (format_price: finer than a cent, it keeps its digits).
std::string money(Micros amount, std::string_view currency, std::string_view per) {
  return format_price(amount, sanitize(currency), per);
}

std::string money(const std::optional<Micros>& amount, std::string_view currency,
                  std::string_view per) {
  return amount ? money(*amount, currency, per) : "-";
}

// "7 d: 10 % off, 30 d: 20 % off" from {"7": 100, "30": 200}, shortest term first.
std::string reserved_terms(const api::PriceVersion& v) {
  if (v.reserved_discount_permille.empty()) return "no discounts";
  std::vector<std::pair<int, std::string>> terms;
  for (const auto& [days, permille] : v.reserved_discount_permille) {
    terms.emplace_back(std::atoi(days.c_str()),
                       fmt::format("{} d: {} off", days, format_permille_percent(permille)));
  }
  std::sort(terms.begin(), terms.end());
  std::string out;
  for (const auto& [days, text] : terms) out += (out.empty() ? "" : ", ") + text;
  return out;
}

// The built-in price book is in force from the start of time: said so, not as 1970-01-01.
std::string effective_at(const api::PriceVersion& v) {
  return v.effective_at == Timestamp{} ? "always (the built-in price book)"
                                       : format_rfc3339(v.effective_at);
}

std::string version_view(const api::PriceVersion& v) {
  const std::string& currency = v.currency;
  std::string text = render_fields({
      {"Version", std::to_string(v.version)},
      {"Effective at", effective_at(v)},
      {"Set at", format_rfc3339(v.set_at)},
      {"CPU", money(v.cpu_per_core_hour_micros, currency, "core-h")},
      {"Memory", money(v.memory_per_gb_hour_micros, currency, "GB-h")},
      {"Disk", money(v.disk_per_gb_hour_micros, currency, "GB-h") + " while running"},
      {"Storage", money(v.storage_per_gb_month_micros, currency, "GB-month")},
      {"Egress", money(v.egress_per_gb_micros, currency, "GB")},
      {"Minimum", fmt::format("{} s per start", v.minimum_billed_seconds)},
      {"Spot floor",
       fmt::format("{} of on-demand", format_permille_percent(v.spot_floor_permille))},
      {"Reserved terms", reserved_terms(v)},
  });
  Table gpus({"GPU TYPE", "ON-DEMAND PER GPU-HOUR"});
  for (const auto& [type, price] : v.gpu_per_hour_micros) {
    gpus.add_row({type, money(price, currency, "GPU-h")});
  }
  return text + "\n" + gpus.render();
}

std::string prices_view(const api::Prices& prices) {
  std::string text = version_view(prices.current);
  for (const auto& v : prices.upcoming) {
    text +=
        fmt::format("\nUpcoming version {} from {}\n", v.version, format_rfc3339(v.effective_at));
  }
  return text;
}

std::string history_view(const std::vector<api::PriceVersion>& items) {
  Table table({"VERSION", "EFFECTIVE AT", "SET AT", "GPU TYPES", "MINIMUM", "SPOT FLOOR"});
  for (const auto& v : items) {
    table.add_row({std::to_string(v.version), effective_at(v), format_rfc3339(v.set_at),
                   std::to_string(v.gpu_per_hour_micros.size()),
                   fmt::format("{} s", v.minimum_billed_seconds),
                   format_permille_percent(v.spot_floor_permille)});
  }
  return table.render();
}

std::string spot_view(const api::SpotPrices& body) {
  const std::string& currency = body.currency;
  Table table({"GPU TYPE", "AT", "PRICE", "UTILISATION"});
  Table now({"GPU TYPE", "NOW", "FLOOR", "CAP"});
  for (const auto& type : body.items) {
    now.add_row({type.gpu_type, money(type.current_per_gpu_hour_micros, currency, "GPU-h"),
                 money(type.floor_per_gpu_hour_micros, currency, "GPU-h"),
                 money(type.cap_per_gpu_hour_micros, currency, "GPU-h")});
    for (const auto& point : type.points) {
      table.add_row({point.gpu_type, format_rfc3339(point.at),
                     money(point.price_per_gpu_hour_micros, currency, "GPU-h"),
                     format_permille_percent(point.utilisation_permille)});
    }
  }
  return now.render() + "\n" + table.render();
}

std::string estimate_view(const api::Estimate& e) {
  const std::string& currency = e.currency;
  const api::HourlyCharge& per_hour = e.per_hour_micros;
  Fields fields = {
      {"GPU type", e.gpu_type},
      {"Pricing", std::string(model::to_string(e.pricing))},
      {"GPU price", money(e.gpu_price_per_gpu_hour_micros, currency, "GPU-h")},
      {"GPU", money(per_hour.gpu, currency, "h")},
      {"CPU", money(per_hour.cpu, currency, "h")},
      {"Memory", money(per_hour.memory, currency, "h")},
      {"Disk", money(per_hour.disk, currency, "h")},
      {"Total", money(per_hour.total, currency, "h")},
      {"Stopped", money(e.stopped_storage_per_hour_micros, currency, "h") + " for the disk"},
      {"Minimum", fmt::format("{} s per start, {}", e.minimum_billed_seconds,
                              format_money(e.minimum_charge_micros, sanitize(currency)))},
  };
  if (e.spot) {
    fields.push_back(
        {"Spot range",
         fmt::format("{} .. {}", money(e.spot->floor_per_gpu_hour_micros, currency, "GPU-h"),
                     money(e.spot->cap_per_gpu_hour_micros, currency, "GPU-h"))});
    fields.push_back({"Spot now", money(e.spot->current_per_gpu_hour_micros, currency, "GPU-h")});
  }
  if (const auto& work = e.work) {
    fields.push_back(
        {"Work", fmt::format("{} epochs of {} ({} images, {})", work->epochs, sanitize(work->model),
                             work->images, sanitize(work->precision))});
    fields.push_back(
        {"Throughput",
         fmt::format("{:.1f} images/s (measured on {} GPUs at batch {}, {} px; "
                     "linear scaling assumed)",
                     work->images_per_s, work->measured_gpus, work->batch, work->image_size)});
    fields.push_back({"Expected time", format_duration(work->seconds)});
    fields.push_back({"Expected cost", format_money(work->cost_micros, sanitize(currency))});
  }
  return render_fields(fields);
}

// estimate's work: N epochs of ResNet-50 (api::EstimateWork).
struct WorkOptions {
  std::optional<int64_t> epochs;
  std::optional<int64_t> images_per_epoch;
  std::optional<std::string> precision;
};

struct SetOptions {
  std::string effective_at;
  std::vector<std::string> gpu;  // TYPE=PRICE
  std::vector<std::string> unprice;
  std::string cpu, memory, disk, storage, egress;
  int64_t minimum_seconds = 0;
  int spot_floor_permille = 0;
  std::vector<std::string> reserved;  // DAYS=PERMILLE
  // Whether those two were given (any value, even a wrong one, goes to the server to judge).
  CLI::Option* minimum_flag = nullptr;
  CLI::Option* spot_floor_flag = nullptr;
  bool in_micros = false;
};

Result<api::PriceChange> change_body(const SetOptions& options) {
  api::PriceChange body;
  if (!options.effective_at.empty()) {
    body.effective_at = parse_rfc3339(options.effective_at);
    if (!body.effective_at) {
      return fail(usage_error(
          fmt::format("--effective-at '{}' is not an RFC 3339 UTC time (e.g. 2026-12-31T00:00:00Z)",
                      options.effective_at)));
    }
  }
  for (const auto& assignment : options.gpu) {
    const auto equals = assignment.find('=');
    if (equals == 0 || equals == std::string::npos) {
      return fail(usage_error(fmt::format("--gpu '{}' is not TYPE=PRICE", assignment)));
    }
    GPURENT_TRY(price, parse_amount(assignment.substr(equals + 1), options.in_micros));
    body.gpu_per_hour_micros[assignment.substr(0, equals)] = price;
  }
  for (const auto& type : options.unprice) body.gpu_per_hour_micros[type] = std::nullopt;
  const std::pair<const std::string*, std::optional<Micros> api::PriceChange::*> amounts[] = {
      {&options.cpu, &api::PriceChange::cpu_per_core_hour_micros},
      {&options.memory, &api::PriceChange::memory_per_gb_hour_micros},
      {&options.disk, &api::PriceChange::disk_per_gb_hour_micros},
      {&options.storage, &api::PriceChange::storage_per_gb_month_micros},
      {&options.egress, &api::PriceChange::egress_per_gb_micros}};
  for (const auto& [text, member] : amounts) {
    if (text->empty()) continue;
    GPURENT_TRY(value, parse_amount(*text, options.in_micros));
    body.*member = value;
  }
  if (options.minimum_flag->count() > 0) body.minimum_billed_seconds = options.minimum_seconds;
  if (options.spot_floor_flag->count() > 0) body.spot_floor_permille = options.spot_floor_permille;
  for (const auto& assignment : options.reserved) {
    const auto equals = assignment.find('=');
    const char* end = assignment.data() + assignment.size();
    int permille = 0;
    if (equals == 0 || equals == std::string::npos ||
        std::from_chars(assignment.data() + equals + 1, end, permille) !=
            std::from_chars_result{end, std::errc()}) {
      return fail(
          usage_error(fmt::format("--reserved-discount '{}' is not DAYS=PERMILLE", assignment)));
    }
    body.reserved_discount_permille[assignment.substr(0, equals)] = permille;
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
  auto work = std::make_shared<WorkOptions>();
  auto* estimate = app.add_subcommand(
      "estimate",
      "What a launch would cost per hour (the flags of launch), and with --epochs how long and "
      "how much N epochs of ResNet-50 training take on it; creates nothing");
  estimate->group("Billing");
  add_launch_options(*estimate, *launch);
  auto* epochs =
      estimate
          ->add_option("--epochs", work->epochs,
                       "time and price this many epochs of ResNet-50 training (measured figures)")
          ->check(CLI::Range(1, 100'000));
  estimate
      ->add_option("--images-per-epoch", work->images_per_epoch,
                   "images an epoch (default: ImageNet-1k's 1,281,167)")
      ->check(CLI::Range(int64_t{1}, int64_t{10'000'000'000}))
      ->needs(epochs);
  estimate->add_option("--precision", work->precision, "amp (default) or fp32")
      ->check(CLI::IsMember({"amp", "fp32"}))
      ->needs(epochs);
  estimate->callback([&ctx, launch, work] {
    ctx.set_command([&ctx, launch, work]() -> Status {
      GPURENT_TRY(request, launch_request(*launch));
      std::optional<api::EstimateWork> asked;
      if (work->epochs) {
        asked = api::EstimateWork{.model = "resnet50",
                                  .epochs = *work->epochs,
                                  .images_per_epoch = work->images_per_epoch,
                                  .precision = work->precision};
      }
      return ctx.call_and_show(
          [&](client::ApiClient& api) {
            return api.billing().estimate(request.spec, request.runtime, asked);
          },
          estimate_view);
    });
  });
}

}  // namespace gpurent::cli
