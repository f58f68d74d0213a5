// nodes and join-tokens: the GPU hosts (operators).
#include <CLI/App.hpp>
#include <memory>
#include <optional>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/views.h"

namespace gpurent::cli {
namespace {

struct JoinTokenOptions {
  std::string ttl;
  std::string description;
};

Status create_join_token(Context& ctx, const JoinTokenOptions& options) {
  api::JoinTokenCreate request;
  if (!options.description.empty()) request.description = options.description;
  if (!options.ttl.empty()) {
    GPURENT_TRY(seconds, parse_duration_seconds(options.ttl));
    request.ttl_s = seconds;
  }
  GPURENT_TRY(api, ctx.api());
  return ctx.show(api->access().create_join_token(request),
                  [&ctx, api](const api::JoinToken& value) {
                    return join_token_view(value, api->base_url(), ctx.now());
                  });
}

}  // namespace

void add_node_commands(CLI::App& app, Context& ctx) {
  auto* nodes =
      app.add_subcommand("nodes", "GPU hosts (operators); alone: list them")->group("Nodes");
  nodes->require_subcommand(0, 1);
  const auto list = [&ctx] {
    ctx.set_command([&ctx] {
      return ctx.call_and_show([](client::ApiClient& api) { return api.nodes().list(); },
                               [&ctx](const auto& value) { return nodes_view(value, ctx.now()); });
    });
  };
  ctx.add_watch_option(*nodes->add_subcommand("ls", "List nodes")->callback(list));
  auto id = std::make_shared<std::string>();
  auto* show = nodes->add_subcommand("show", "Show one node and its GPUs");
  show->add_option("id", *id, "node id")->required();
  show->callback([&ctx, id] {
    ctx.set_command([&ctx, id] {
      return ctx.call_and_show([&](client::ApiClient& api) { return api.nodes().get(*id); },
                               [&ctx](const auto& value) { return node_view(value, ctx.now()); });
    });
  });
  for (const auto& [action, description] :
       {std::pair{"cordon", "Place nothing new on a node"},
        {"uncordon", "Let new work land on a node again"},
        {"drain", "Cordon a node and move its instances to other nodes"}}) {
    auto node_id = std::make_shared<std::string>();
    auto* command = nodes->add_subcommand(action, description);
    command->add_option("id", *node_id, "node id")->required();
    command->callback([&ctx, node_id, action = std::string(action)] {
      ctx.set_command([&ctx, node_id, action] {
        return ctx.call_and_show(
            [&](client::ApiClient& api) { return api.nodes().action(*node_id, action); },
            [&ctx](const auto& value) { return node_view(value, ctx.now()); });
      });
    });
  }
  auto release_node = std::make_shared<std::string>();
  auto release_index = std::make_shared<int>(0);
  auto* release = nodes->add_subcommand(
      "release-gpu", "Put a quarantined GPU back in service (after resetting and checking it)");
  release->add_option("id", *release_node, "node id")->required();
  release->add_option("index", *release_index, "the GPU's device index on the node")
      ->required()
      ->check(CLI::NonNegativeNumber);
  release->callback([&ctx, release_node, release_index] {
    ctx.set_command([&ctx, release_node, release_index] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) {
            return api.nodes().release_gpu(*release_node, *release_index);
          },
          [&ctx](const auto& value) { return node_view(value, ctx.now()); });
    });
  });
  nodes->callback([nodes, list] {
    if (nodes->get_subcommands().empty()) list();
  });

  auto* tokens =
      app.add_subcommand("join-tokens", "Tokens that let new nodes join")->group("Nodes");
  tokens->require_subcommand(1);
  auto options = std::make_shared<JoinTokenOptions>();
  auto* create = tokens->add_subcommand("create", "Create a join token (printed once)");
  create->add_option("--ttl", options->ttl, "how long it stays valid, e.g. 24h (server default)");
  create->add_option("--description", options->description, "what the token is for");
  create->callback([&ctx, options] {
    ctx.set_command([&ctx, options] { return create_join_token(ctx, *options); });
  });
}

}  // namespace gpurent::cli
