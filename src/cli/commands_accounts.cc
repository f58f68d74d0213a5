// packages (products, define, buy, ls) and, under `billing`, invoices, invoice, revenue and
// settings.
#include <CLI/App.hpp>
#include <memory>

#include <fmt/format.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/output.h"

namespace gpurent::cli {
namespace {

std::string text_of(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "";
  return sanitize(it->is_string() ? it->get<std::string>() : it->dump());
}

std::string money_of(const Json& object, const char* key, std::string_view currency) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return "-";
  return format_money(it->get<Micros>(), currency);
}

std::string products_view(const Json& items) {
  Table table({"NAME", "GPU TYPE", "GPU-HOURS", "PRICE", "VALID (DAYS)"});
  for (const auto& p : items) {
    table.add_row({text_of(p, "name"), text_of(p, "gpu_type"), text_of(p, "gpu_hours"),
                   money_of(p, "price_micros", text_of(p, "currency")),
                   text_of(p, "validity_days")});
  }
  return table.render();
}

std::string packages_view(const Json& items) {
  Table table({"ID", "PRODUCT", "GPU TYPE", "REMAINING GPU-H", "STATE", "EXPIRES"});
  for (const auto& p : items) {
    const int64_t seconds = p.value("remaining_gpu_seconds", int64_t{0});
    table.add_row({text_of(p, "id"), text_of(p, "product"), text_of(p, "gpu_type"),
                   fmt::format("{}/{}", format_duration(seconds), text_of(p, "gpu_hours") + "h"),
                   text_of(p, "state"), text_of(p, "expires_at")});
  }
  return table.render();
}

std::string invoices_view(const Json& items) {
  Table table({"ID", "TENANT", "OPENING", "CHARGES", "CREDITS", "PAYMENTS", "CLOSING"});
  for (const auto& i : items) {
    const std::string currency = text_of(i, "currency");
    table.add_row({text_of(i, "id"), text_of(i, "tenant_id"),
                   money_of(i, "opening_balance_micros", currency),
                   money_of(i, "charges_micros", currency), money_of(i, "credits_micros", currency),
                   money_of(i, "payments_micros", currency),
                   money_of(i, "closing_balance_micros", currency)});
  }
  return table.render();
}

std::string invoice_view(const Json& invoice) {
  const std::string currency = text_of(invoice, "currency");
  Table table({"CATEGORY", "DESCRIPTION", "QUANTITY", "AMOUNT"});
  for (const char* section : {"lines", "prepaid"}) {
    for (const auto& line : invoice.value(section, Json::array())) {
      const std::string prefix = std::string_view(section) == "prepaid" ? "prepaid: " : "";
      table.add_row({prefix + text_of(line, "category"), text_of(line, "description"),
                     text_of(line, "quantity") + " " + text_of(line, "unit"),
                     money_of(line, "amount_micros", currency)});
    }
  }
  // The summary reads as the balance moved: opening, what was taken (charges, "-"), what was
  // added (credits and payments, "+"), closing. The lines keep the ledger's sign: a charge is
  // positive, a credit or payment negative.
  const auto moved = [&](const char* key) {
    const auto it = invoice.find(key);
    return it != invoice.end() && it->is_number_integer()
               ? format_balance_change(-it->get<Micros>(), currency)
               : std::string("-");
  };
  return render_fields(
             {{"Invoice", text_of(invoice, "id")},
              {"Tenant", text_of(invoice, "tenant_id")},
              {"Period",
               text_of(invoice, "period_start") + " .. " + text_of(invoice, "period_end")},
              {"Opening balance", money_of(invoice, "opening_balance_micros", currency)},
              {"Charges", moved("charges_micros")},
              {"Credits", moved("credits_micros")},
              {"Payments", moved("payments_micros")},
              {"Closing balance", money_of(invoice, "closing_balance_micros", currency)}}) +
         "\nLines (charges positive; credits and payments negative):\n" + table.render();
}

std::string settings_view(const Json& s) {
  const std::string currency = text_of(s, "currency");
  return render_fields(
      {{"Tenant", text_of(s, "tenant_id")},
       {"Warning below", format_money(s.value("warning_threshold_micros", Micros{0}), currency)},
       {"Credit limit", format_money(s.value("credit_limit_micros", Micros{0}), currency)},
       {"Below warning", text_of(s, "below_warning_threshold")}});
}

std::string revenue_view(const Json& r) {
  const std::string currency = text_of(r, "currency");
  std::string out = render_fields({{"From", text_of(r, "from")},
                                   {"To", text_of(r, "to")},
                                   {"Revenue", money_of(r, "total_micros", currency)},
                                   {"Credits granted", money_of(r, "credits_micros", currency)}});
  for (const auto& [title, key] :
       {std::pair{"GPU TYPE", "by_gpu_type"}, std::pair{"TENANT", "by_tenant"}}) {
    Table table({title, "REVENUE"});
    const Json amounts = r.value(key, Json::object());  // items() must not outlive it
    for (const auto& [name, amount] : amounts.items()) {
      table.add_row({sanitize(name), format_money(amount.get<Micros>(), currency)});
    }
    out += "\n" + table.render();
  }
  return out;
}

struct ProductOptions {
  std::string name;
  std::string gpu_type;
  int64_t gpu_hours = 0;
  std::string price;
  int validity_days = 0;
};

struct SettingsOptions {
  std::string tenant;
  std::string warning;
  std::string credit_limit;
};

void add_package_commands(CLI::App& app, Context& ctx) {
  auto* packages = app.add_subcommand("packages", "Prepaid GPU-hour packages")->group("Billing");
  packages->require_subcommand(1);

  auto* products = packages->add_subcommand("products", "What packages can be bought");
  products->callback([&ctx] {
    ctx.set_command([&ctx] {
      return ctx.call_and_show(
          [](client::ApiClient& api) { return api.billing().package_products(); }, products_view);
    });
  });

  auto product = std::make_shared<ProductOptions>();
  auto* define = packages->add_subcommand("define", "Define or change a product (operators)");
  define->add_option("name", product->name, "product name")->required();
  define->add_option("--gpu-type", product->gpu_type, "GPU type, e.g. h100-80g")->required();
  define->add_option("--gpu-hours", product->gpu_hours, "GPU-hours it holds")->required();
  define->add_option("--price", product->price, "price in currency units")->required();
  define->add_option("--validity-days", product->validity_days, "days from purchase")->required();
  define->callback([&ctx, product] {
    ctx.set_command([&ctx, product]() -> Status {
      GPURENT_TRY(price, parse_amount(product->price, false));
      const Json body = {{"name", product->name},
                         {"gpu_type", product->gpu_type},
                         {"gpu_hours", product->gpu_hours},
                         {"price_micros", price},
                         {"validity_days", product->validity_days}};
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.billing().set_package_product(body); },
          [](const Json& p) { return products_view(Json::array({p})); });
    });
  });

  auto buy_product = std::make_shared<std::pair<std::string, std::string>>();
  auto* buy = packages->add_subcommand("buy", "Buy a package, paid from the balance at once");
  buy->add_option("product", buy_product->first, "product name")->required();
  buy->add_option("--idempotency-key", buy_product->second, "a retry with the same key pays once");
  buy->callback([&ctx, buy_product] {
    ctx.set_command([&ctx, buy_product] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) {
            return api.billing().buy_package(buy_product->first, buy_product->second);
          },
          [](const Json& p) { return packages_view(Json::array({p})); });
    });
  });

  auto tenant = std::make_shared<std::string>();
  auto* list = packages->add_subcommand("ls", "The tenant's packages");
  list->add_option("--tenant", *tenant, "another tenant's (operators)");
  list->callback([&ctx, tenant] {
    ctx.set_command([&ctx, tenant] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.billing().list_packages(*tenant); },
          packages_view);
    });
  });
}

void add_statement_commands(CLI::App& billing, Context& ctx) {
  auto tenant = std::make_shared<std::string>();
  auto* invoices = billing.add_subcommand("invoices", "The tenant's monthly statements");
  invoices->add_option("--tenant", *tenant, "another tenant's (operators)");
  invoices->callback([&ctx, tenant] {
    ctx.set_command([&ctx, tenant] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.billing().list_invoices(*tenant); },
          invoices_view);
    });
  });

  struct InvoiceOptions {
    std::string id;
    std::string tenant;
    bool csv = false;
  };
  auto options = std::make_shared<InvoiceOptions>();
  auto* invoice = billing.add_subcommand("invoice", "One month's statement");
  invoice->add_option("id", options->id, "the month, YYYY-MM")->required();
  invoice->add_option("--tenant", options->tenant, "another tenant's (operators)");
  invoice->add_flag("--csv", options->csv, "print it as CSV");
  invoice->callback([&ctx, options] {
    ctx.set_command([&ctx, options]() -> Status {
      if (!options->csv) {
        return ctx.call_and_show(
            [&](client::ApiClient& api) {
              return api.billing().get_invoice(options->id, options->tenant);
            },
            invoice_view);
      }
      GPURENT_TRY(api, ctx.api());
      GPURENT_TRY(csv, api->billing().get_invoice_csv(options->id, options->tenant));
      ctx.out() << csv;
      return {};
    });
  });

  auto window = std::make_shared<std::pair<std::string, std::string>>();
  auto* revenue = billing.add_subcommand("revenue", "Revenue by GPU type and tenant (operators)");
  revenue->add_option("--from", window->first, "from this time on (RFC 3339)");
  revenue->add_option("--to", window->second, "before this time (RFC 3339)");
  revenue->callback([&ctx, window] {
    ctx.set_command([&ctx, window] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) {
            return api.billing().revenue(window->first, window->second);
          },
          revenue_view);
    });
  });

  auto settings = std::make_shared<SettingsOptions>();
  auto* guard = billing.add_subcommand(
      "settings", "The warning threshold and credit limit (operators change them)");
  guard->add_option("--tenant", settings->tenant, "another tenant's (operators)");
  guard->add_option("--warning", settings->warning, "set: warn below this amount");
  guard->add_option("--credit-limit", settings->credit_limit, "set: stop work below -this");
  guard->callback([&ctx, settings] {
    ctx.set_command([&ctx, settings]() -> Status {
      if (settings->warning.empty() && settings->credit_limit.empty()) {
        return ctx.call_and_show(
            [&](client::ApiClient& api) {
              return api.billing().balance_settings(settings->tenant);
            },
            settings_view);
      }
      Json body = {{"tenant_id", settings->tenant}};
      if (!settings->warning.empty()) {
        GPURENT_TRY(warning, parse_amount(settings->warning, false));
        body["warning_threshold_micros"] = warning;
      }
      if (!settings->credit_limit.empty()) {
        GPURENT_TRY(limit, parse_amount(settings->credit_limit, false));
        body["credit_limit_micros"] = limit;
      }
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.billing().set_balance_settings(body); },
          settings_view);
    });
  });
}

}  // namespace

void add_account_commands(CLI::App& app, Context& ctx) {
  add_package_commands(app, ctx);
  // Under `billing`, which add_billing_commands() made.
  add_statement_commands(*app.get_subcommand("billing"), ctx);
}

}  // namespace gpurent::cli
