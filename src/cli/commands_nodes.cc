// nodes and join-tokens: the GPU hosts (operators).
#include <fmt/ranges.h>
#include <CLI/App.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/output.h"
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

// How often `nodes bench --wait` asks whether the node has answered.
constexpr auto kBenchmarkPollInterval = std::chrono::seconds(1);

// Asks the node to measure its idle GPUs; with a timeout, waits until it has answered (progress on
// stderr) and shows the figures.
Status benchmark_node(Context& ctx, const std::string& node_id,
                      std::optional<std::chrono::seconds> wait_timeout) {
  GPURENT_TRY(api, ctx.api());
  auto asked = api->nodes().benchmark(node_id);
  if (!asked || !wait_timeout) return ctx.show(std::move(asked), benchmark_request_view);
  const int64_t request = asked->value.id;
  ctx.err() << fmt::format("node {} measures GPUs {} (request {})\n", sanitize(node_id),
                           fmt::join(asked->value.gpus, ","), request)
            << std::flush;
  const auto deadline = std::chrono::steady_clock::now() + *wait_timeout;
  for (;;) {
    std::this_thread::sleep_for(kBenchmarkPollInterval);
    GPURENT_TRY(node, api->nodes().get(node_id));
    const auto& pending = node.value.benchmark_pending;
    // Answered, or merged into a later request that includes it and was answered.
    if (!pending || pending->id < request) break;
    if (node.value.state == model::NodeState::kDown) {
      return fail(Error::conflict(
          "node_down", fmt::format("node {} went down before answering benchmark request {}; "
                                   "the request stays until it answers or times out",
                                   node_id, pending->id)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return fail(Error{ErrorKind::kUnavailable, "wait_timeout",
                        fmt::format("node {} has not answered benchmark request {} after {}",
                                    node_id, pending->id, format_duration(wait_timeout->count()))});
    }
  }
  return ctx.show(api->nodes().benchmarks(node_id),
                  [&ctx](const auto& value) { return node_benchmarks_view(value, ctx.now()); });
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
  struct BenchFlags {
    std::string node_id;
    bool wait = false;
    std::string wait_timeout = "30m";
  };
  auto bench_flags = std::make_shared<BenchFlags>();
  auto* bench = nodes->add_subcommand(
      "bench", "Measure a node's idle GPUs: GEMM TFLOPS, memory and host bandwidth, peer copies");
  bench->add_option("id", bench_flags->node_id, "node id")->required();
  bench->add_flag("--wait", bench_flags->wait,
                  "wait for the figures and show them (progress on stderr)");
  bench->add_option("--wait-timeout", bench_flags->wait_timeout, "how long --wait waits");
  bench->callback([&ctx, bench_flags] {
    ctx.set_command([&ctx, bench_flags]() -> Status {
      std::optional<std::chrono::seconds> timeout;
      if (bench_flags->wait) {
        GPURENT_TRY(seconds, parse_duration_seconds(bench_flags->wait_timeout));
        timeout = std::chrono::seconds(seconds);
      }
      return benchmark_node(ctx, bench_flags->node_id, timeout);
    });
  });
  auto history_node = std::make_shared<std::string>();
  auto* history = nodes->add_subcommand(
      "benchmarks", "What a node's GPUs measured, newest first, against their type's median");
  history->add_option("id", *history_node, "node id")->required();
  history->callback([&ctx, history_node] {
    ctx.set_command([&ctx, history_node] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.nodes().benchmarks(*history_node); },
          [&ctx](const auto& value) { return node_benchmarks_view(value, ctx.now()); });
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
