// volumes create, ls (list), show, delete (rm): persistent per-tenant volumes that instances
// mount with `launch --volume VOLUME_ID:/path`.
#include <fmt/format.h>

#include <CLI/App.hpp>
#include <memory>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/views.h"

namespace gpurent::cli {
namespace {

struct CreateOptions {
  client::VolumeRequest request;
  std::string idempotency_key;
};

// A verb that takes one volume id and shows what the server answered.
void add_id_verb(CLI::App& volumes, Context& ctx, const char* name, const char* alias,
                 const char* description,
                 Result<Json> (client::ApiClient::*call)(std::string_view)) {
  auto id = std::make_shared<std::string>();
  auto* verb = volumes.add_subcommand(name, description);
  if (alias != nullptr) verb->alias(alias);
  verb->add_option("id", *id, "volume id")->required();
  verb->callback([&ctx, id, call, deleting = std::string_view(name) == "delete"] {
    ctx.set_command([&ctx, id, call, deleting] {
      return ctx.call_and_show([&](client::ApiClient& api) { return (api.*call)(*id); },
                               [&ctx, id, deleting](const Json& value) {
                                 // DELETE answers 204 without a body.
                                 return deleting ? fmt::format("deleted volume {}\n", *id)
                                                 : volume_view(value, ctx.now());
                               });
    });
  });
}

}  // namespace

void add_volume_commands(CLI::App& app, Context& ctx) {
  auto* volumes =
      app.add_subcommand("volumes", "Persistent volumes that instances mount")->group("Instances");
  volumes->alias("volume");
  volumes->require_subcommand(1);

  auto options = std::make_shared<CreateOptions>();
  auto* create =
      volumes->add_subcommand("create", "Create a volume: volumes create NAME --size-gb 100");
  create->add_option("name", options->request.name, "a name: letters, digits, - _ .")->required();
  create->add_option("--size-gb", options->request.size_gb, "size in GB (billed per GB-month)")
      ->required()
      ->check(CLI::PositiveNumber);
  create->add_option("--node", options->request.node_id,
                     "the node it lives on (operators); default: where it is first used");
  create->add_option("--idempotency-key", options->idempotency_key,
                     "a retry with the same key returns the first volume");
  create->callback([&ctx, options] {
    ctx.set_command([&ctx, options] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) {
            return api.create_volume(options->request, options->idempotency_key);
          },
          [&ctx](const Json& value) { return volume_view(value, ctx.now()); });
    });
  });

  ctx.add_watch_option(
      *volumes->add_subcommand("ls", "List your volumes")->alias("list")->callback([&ctx] {
        ctx.set_command([&ctx] {
          return ctx.call_and_show(
              [](client::ApiClient& api) { return api.list_volumes(); },
              [&ctx](const Json& value) { return volumes_view(value, ctx.now()); });
        });
      }));
  add_id_verb(*volumes, ctx, "show", nullptr, "Show a volume", &client::ApiClient::get_volume);
  add_id_verb(*volumes, ctx, "delete", "rm",
              "Delete a volume and its data (refused while an instance mounts it)",
              &client::ApiClient::delete_volume);
}

}  // namespace gpurent::cli
