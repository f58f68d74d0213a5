// balance, usage, transfers, topup: under `billing` and as short forms at the top.
#include <CLI/App.hpp>
#include <memory>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/views.h"

namespace gpurent::cli {
namespace {

struct TopupOptions {
  std::string tenant;
  std::string amount;
  bool in_micros = false;
  std::string reference;
  std::string idempotency_key;
};

Status topup(Context& ctx, const TopupOptions& options) {
  GPURENT_TRY(amount, parse_amount(options.amount, options.in_micros));
  return ctx.call_and_show(
      [&](client::ApiClient& api) {
        return api.billing().topup(
            {.tenant_id = options.tenant,
             .amount_micros = amount,
             .reference =
                 options.reference.empty() ? std::nullopt : std::optional(options.reference)},
            options.idempotency_key);
      },
      topup_view);
}

void add_verbs(CLI::App& parent, Context& ctx, const std::string& group) {
  auto tenant = std::make_shared<std::string>();
  auto* balance = parent.add_subcommand("balance", "The tenant's balance");
  balance->add_option("--tenant", *tenant, "another tenant's (operators)");
  balance->callback([&ctx, tenant] {
    ctx.set_command([&ctx, tenant] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.billing().balance(*tenant); }, balance_view);
    });
  });

  auto* usage = parent.add_subcommand("usage", "What each run has cost");
  usage->callback([&ctx] {
    ctx.set_command([&ctx] {
      return ctx.call_and_show([](client::ApiClient& api) { return api.billing().usage(); },
                               [&ctx](const auto& value) { return usage_view(value, ctx.now()); });
    });
  });

  auto* transfers = parent.add_subcommand("transfers", "The ledger transfers of the tenant");
  transfers->callback([&ctx] {
    ctx.set_command([&ctx] {
      return ctx.call_and_show(
          [](client::ApiClient& api) { return api.billing().transfers(); },
          [&ctx](const auto& value) { return transfers_view(value, ctx.now()); });
    });
  });

  auto options = std::make_shared<TopupOptions>();
  auto* topup_command = parent.add_subcommand("topup", "Credit a tenant (operators)");
  topup_command->add_option("tenant", options->tenant, "tenant id")->required();
  topup_command->add_option("amount", options->amount, "amount in currency units, e.g. 100 or 12.5")
      ->required();
  topup_command->add_flag("--micros", options->in_micros, "AMOUNT is in micro-units");
  topup_command->add_option("--reference", options->reference, "a note kept with the transfer");
  topup_command->add_option("--idempotency-key", options->idempotency_key,
                            "a retry with the same key credits only once");
  topup_command->callback(
      [&ctx, options] { ctx.set_command([&ctx, options] { return topup(ctx, *options); }); });

  if (!group.empty()) {
    for (auto* command : {balance, usage, transfers, topup_command}) command->group(group);
  }
}

}  // namespace

void add_billing_commands(CLI::App& app, Context& ctx) {
  auto* billing = app.add_subcommand("billing", "Balance, usage and top-ups")->group("Billing");
  billing->require_subcommand(1);
  add_verbs(*billing, ctx, "");
  add_verbs(app, ctx, "Billing");
}

}  // namespace gpurent::cli
