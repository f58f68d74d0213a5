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

std::string products_view(const std::vector<api::PackageProduct>& items) {
  Table table({"NAME", "GPU TYPE", "GPU-HOURS", "PRICE", "VALID (DAYS)"});
  for (const auto& p : items) {
    table.add_row({p.name, p.gpu_type, std::to_string(p.gpu_hours),
                   format_money(p.price_micros, p.currency.value_or("")),
                   std::to_string(p.validity_days)});
  }
  return table.render();
}

std::string packages_view(const std::vector<api::Package>& items) {
  Table table({"ID", "PRODUCT", "GPU TYPE", "REMAINING GPU-H", "STATE", "EXPIRES"});
  for (const auto& p : items) {
    table.add_row({p.id, p.product, p.gpu_type,
                   fmt::format("{}/{}h", format_duration(p.remaining_gpu_seconds), p.gpu_hours),
                   p.state, format_rfc3339(p.expires_at)});
  }
  return table.render();
}

std::string invoices_view(const std::vector<api::InvoiceSummary>& items) {
  Table table({"ID", "TENANT", "OPENING", "CHARGES", "CREDITS", "PAYMENTS", "CLOSING"});
  for (const auto& i : items) {
    table.add_row({i.id, i.tenant_id, format_money(i.opening_balance_micros, i.currency),
                   format_money(i.charges_micros, i.currency),
                   format_money(i.credits_micros, i.currency),
                   format_money(i.payments_micros, i.currency),
                   format_money(i.closing_balance_micros, i.currency)});
  }
  return table.render();
}

std::string invoice_view(const api::Invoice& invoice) {
  const api::InvoiceSummary& summary = invoice.summary;
  const std::string& currency = summary.currency;
  Table table({"CATEGORY", "DESCRIPTION", "QUANTITY", "AMOUNT"});
  for (const auto& [prefix, lines] :
       {std::pair{"", &invoice.lines}, std::pair{"prepaid: ", &invoice.prepaid}}) {
    for (const auto& line : *lines) {
      table.add_row({prefix + line.category, line.description,
                     fmt::format("{} {}", line.quantity, line.unit),
                     format_money(line.amount_micros, currency)});
    }
  }
  // The summary reads as the balance moved: opening, what was taken (charges, "-"), what was
  // added (credits and payments, "+"), closing. The lines keep the ledger's sign: a charge is
  // positive, a credit or payment negative.
  const auto moved = [&](Micros amount) { return format_balance_change(-amount, currency); };
  return render_fields(
             {{"Invoice", summary.id},
              {"Tenant", summary.tenant_id},
              {"Period",
               format_rfc3339(summary.period_start) + " .. " + format_rfc3339(summary.period_end)},
              {"Opening balance", format_money(summary.opening_balance_micros, currency)},
              {"Charges", moved(summary.charges_micros)},
              {"Credits", moved(summary.credits_micros)},
              {"Payments", moved(summary.payments_micros)},
              {"Closing balance", format_money(summary.closing_balance_micros, currency)}}) +
         "\nLines (charges positive; credits and payments negative):\n" + table.render();
}

std::string settings_view(const api::BalanceSettings& s) {
  return render_fields({{"Tenant", s.tenant_id},
                        {"Warning below", format_money(s.warning_threshold_micros, s.currency)},
                        {"Credit limit", format_money(s.credit_limit_micros, s.currency)},
                        {"Below warning", s.below_warning_threshold ? "yes" : "no"}});
}

std::string revenue_view(const api::RevenueReport& r) {
  std::string out =
      render_fields({{"From", format_rfc3339(r.from)},
                     {"To", format_rfc3339(r.to)},
                     {"Revenue", format_money(r.total_micros, r.currency)},
                     {"Credits granted", format_money(r.credits_micros, r.currency)}});
  for (const auto& [title, amounts] :
       {std::pair{"GPU TYPE", &r.by_gpu_type}, std::pair{"TENANT", &r.by_tenant}}) {
    Table table({title, "REVENUE"});
    for (const auto& [name, amount] : *amounts) {
      table.add_row({name, format_money(amount, r.currency)});
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
      const api::PackageProduct body{.name = product->name,
                                     .gpu_type = product->gpu_type,
                                     .gpu_hours = product->gpu_hours,
                                     .price_micros = price,
                                     .validity_days = product->validity_days};
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.billing().set_package_product(body); },
          [](const api::PackageProduct& p) { return products_view({p}); });
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
          [](const api::Package& p) { return packages_view({p}); });
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
  guard->add_option("--warning", settings->warning,
                    "set: warn below this amount (the credit limit stays)");
  guard->add_option("--credit-limit", settings->credit_limit,
                    "set: stop work below -this (the warning threshold stays)");
  guard->callback([&ctx, settings] {
    ctx.set_command([&ctx, settings]() -> Status {
      if (settings->warning.empty() && settings->credit_limit.empty()) {
        return ctx.call_and_show(
            [&](client::ApiClient& api) {
              return api.billing().balance_settings(settings->tenant);
            },
            settings_view);
      }
      // PUT replaces both settings: the one not given keeps the value the server has.
      GPURENT_TRY(api, ctx.api());
      GPURENT_TRY(current, api->billing().balance_settings(settings->tenant));
      api::BalanceSettingsSet body{
          .tenant_id = current.value.tenant_id,
          .warning_threshold_micros = current.value.warning_threshold_micros,
          .credit_limit_micros = current.value.credit_limit_micros};
      if (!settings->warning.empty()) {
        GPURENT_TRY(warning, parse_amount(settings->warning, false));
        body.warning_threshold_micros = warning;
      }
      if (!settings->credit_limit.empty()) {
        GPURENT_TRY(limit, parse_amount(settings->credit_limit, false));
        body.credit_limit_micros = limit;
      }
      return ctx.show(api->billing().set_balance_settings(body), settings_view);
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
