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

// `volumes show ID`.
void add_show(CLI::App& volumes, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* verb = volumes.add_subcommand("show", "Show a volume");
  verb->add_option("id", *id, "volume id")->required();
  verb->callback([&ctx, id] {
    ctx.set_command([&ctx, id] {
      return ctx.call_and_show([&](client::ApiClient& api) { return api.volumes().get(*id); },
                               [&ctx](const auto& value) { return volume_view(value, ctx.now()); });
    });
  });
}

// `volumes delete ID`: DELETE answers 204 without a body.
void add_delete(CLI::App& volumes, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* verb = volumes.add_subcommand(
      "delete", "Delete a volume and its data (refused while an instance mounts it)");
  verb->alias("rm");
  verb->add_option("id", *id, "volume id")->required();
  verb->callback([&ctx, id] {
    ctx.set_command([&ctx, id]() -> Status {
      GPURENT_TRY(api, ctx.api());
      GPURENT_CHECK(api->volumes().remove(*id));
      return ctx.show(Json{{"id", *id}, {"deleted", true}},
                      [id](const Json&) { return fmt::format("deleted volume {}\n", *id); });
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
            return api.volumes().create(options->request, options->idempotency_key);
          },
          [&ctx](const auto& value) { return volume_view(value, ctx.now()); });
    });
  });

  ctx.add_watch_option(
      *volumes->add_subcommand("ls", "List your volumes")->alias("list")->callback([&ctx] {
        ctx.set_command([&ctx] {
          return ctx.call_and_show(
              [](client::ApiClient& api) { return api.volumes().list(); },
              [&ctx](const auto& value) { return volumes_view(value, ctx.now()); });
        });
      }));
  add_show(*volumes, ctx);
  add_delete(*volumes, ctx);
}

}  // namespace gpurent::cli
