// whoami, tenants, api-keys (create, ls, revoke), audit: who is calling, and who may.
#include <fmt/format.h>

#include <CLI/App.hpp>
#include <memory>

#include "cli/commands.h"
#include "cli/output.h"
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
  create_key->add_option("--role", request->role,
                         "read-only, tenant-member, tenant-admin (default: your own), operator or "
                         "admin");
  create_key->add_option("--name", request->name, "a name to recognise the key by");
  create_key->add_option("--scope", request->scopes,
                         "limit the key to AREA:read, AREA:write, *:read ... (repeatable; AREA "
                         "one of instances, jobs, volumes, billing, ...)");
  auto expires_in = std::make_shared<int64_t>(0);
  create_key->add_option("--expires-in", *expires_in, "the key stops working after N seconds")
      ->check(CLI::PositiveNumber);
  create_key->callback([&ctx, request, expires_in] {
    if (*expires_in > 0) request->expires_at = ctx.now() + std::chrono::seconds(*expires_in);
    ctx.set_command([&ctx, request] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.access().create_api_key(*request); },
          [&ctx](const auto& value) { return api_key_view(value, ctx.now()); });
    });
  });
  auto tenant = std::make_shared<std::string>();
  auto* list_keys = keys->add_subcommand("ls", "List API keys (their secrets are never shown)");
  list_keys->add_option("--tenant", *tenant, "another tenant's (operators)");
  list_keys->callback([&ctx, tenant] {
    ctx.set_command([&ctx, tenant] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.access().list_api_keys(*tenant); },
          [&ctx](const auto& value) { return api_keys_view(value, ctx.now()); });
    });
  });
  auto key_id = std::make_shared<std::string>();
  auto* revoke = keys->add_subcommand("revoke", "Revoke an API key: it stops working at once");
  revoke->add_option("id", *key_id, "the key's id (k-...)")->required();
  revoke->callback([&ctx, key_id] {
    ctx.set_command([&ctx, key_id]() -> Status {
      GPURENT_TRY(api, ctx.api());
      GPURENT_CHECK(api->access().revoke_api_key(*key_id));
      return ctx.show(Json{{"id", *key_id}, {"revoked", true}}, [key_id](const Json&) {
        return fmt::format("revoked API key {}\n", sanitize(*key_id));
      });
    });
  });
}

void add_audit_commands(CLI::App& app, Context& ctx) {
  struct AuditOptions {
    std::string tenant;
    std::string key_id;
    size_t tail = 50;
  };
  auto options = std::make_shared<AuditOptions>();
  auto* audit =
      app.add_subcommand("audit", "Who changed what, from where (tenant admins, operators)")
          ->group("Access");
  audit->add_option("--tenant", options->tenant, "only this tenant's (operators)");
  audit->add_option("--key", options->key_id, "only this key's calls");
  audit->add_option("--tail", options->tail, "show the last N (0: all)")->capture_default_str();
  audit->callback([&ctx, options] {
    ctx.set_command([&ctx, options] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) -> Result<client::Answer<std::vector<api::AuditEntry>>> {
            GPURENT_TRY(items, api.access().list_audit(options->tenant, options->key_id));
            return last_items(std::move(items), options->tail);
          },
          [&ctx](const auto& value) { return audit_view(value, ctx.now()); });
    });
  });
}

}  // namespace gpurent::cli
