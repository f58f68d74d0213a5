// whoami, tenants, api-keys: who is calling, and who may.
#include <CLI/App.hpp>
#include <memory>

#include "cli/commands.h"
#include "cli/views.h"

namespace gpurent::cli {

void add_access_commands(CLI::App& app, Context& ctx) {
  app.add_subcommand("whoami", "The tenant, key and role of the API key in use")
      ->group("Access")
      ->callback([&ctx] {
        ctx.set_command([&ctx] {
          return ctx.call_and_show([](client::ApiClient& api) { return api.access().whoami(); },
                                   whoami_view);
        });
      });

  auto* tenants = app.add_subcommand("tenants", "Tenants (operators)")->group("Access");
  tenants->require_subcommand(1);
  auto name = std::make_shared<std::string>();
  auto* create = tenants->add_subcommand("create", "Create a tenant");
  create->add_option("name", *name, "the tenant's name")->required();
  create->callback([&ctx, name] {
    ctx.set_command([&ctx, name] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.access().create_tenant(*name); },
          [&ctx](const auto& value) { return tenant_view(value, ctx.now()); });
    });
  });
  tenants->add_subcommand("ls", "List tenants with their balances")->callback([&ctx] {
    ctx.set_command([&ctx] {
      return ctx.call_and_show(
          [](client::ApiClient& api) { return api.access().list_tenants(); },
          [&ctx](const auto& value) { return tenants_view(value, ctx.now()); });
    });
  });

  auto* keys = app.add_subcommand("api-keys", "API keys")->group("Access");
  keys->require_subcommand(1);
  auto request = std::make_shared<client::ApiKeyRequest>();
  auto* create_key = keys->add_subcommand("create", "Create an API key (printed once)");
  create_key->add_option("--tenant", request->tenant_id, "for this tenant (operators)");
  create_key->add_option("--role", request->role, "tenant (default), operator or admin");
  create_key->add_option("--name", request->name, "a name to recognise the key by");
  create_key->callback([&ctx, request] {
    ctx.set_command([&ctx, request] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.access().create_api_key(*request); },
          [&ctx](const auto& value) { return api_key_view(value, ctx.now()); });
    });
  });
}

}  // namespace gpurent::cli
