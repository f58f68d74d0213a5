// launch, ps, show, logs, stop, start, rm: under `instances` and as short forms at the top.
#include <fmt/format.h>

#include <CLI/App.hpp>
#include <chrono>
#include <memory>
#include <thread>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/views.h"

namespace gpurent::cli {
namespace {

// How often `launch --wait` asks for the instance's state.
constexpr auto kWaitPollInterval = std::chrono::seconds(1);

struct LaunchOptions {
  std::string gpu;
  int count = 1;
  int gpu_milli = model::kMilliPerGpu;
  int gpu_memory_gb = 0;
  int min_gpu_memory_gb = 0;
  int disk_gb = 0;
  std::vector<std::string> selector;
  bool spot = false;
  int priority = 0;
  bool no_queue = false;
  std::string name;
  std::string template_name;
  std::string runtime = "auto";
  std::string image;
  std::vector<std::string> services;
  int cpu = 0;
  int memory_gb = 0;
  std::vector<std::string> env;
  std::vector<std::string> volumes;  // VOLUME_ID:/mount/path
  std::string idempotency_key;
  bool wait = false;
  std::string wait_timeout = "10m";
  std::vector<std::string> command;
};

// Polls until the instance runs (success) or has ended without running (an Error), at most for
// the timeout. Progress goes to stderr so stdout carries only the final object.
Result<Json> wait_until_running(Context& ctx, client::ApiClient& api, Json instance,
                                std::chrono::seconds timeout) {
  const std::string id = field_text(instance, "id");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string reported;
  for (;;) {
    const std::string state = field_text(instance, "state");
    if (state != reported) {
      ctx.err() << fmt::format("{}: {}\n", sanitize(id), sanitize(state)) << std::flush;
      reported = state;
    }
    if (state == "running") return instance;
    if (state == "failed" || state == "stopped" || state == "preempted" || state == "terminated") {
      const std::string reason = field_text(instance, "reason");
      return fail(Error::conflict(
          "instance_not_running",
          fmt::format("instance {} is {}{}{}", id, state, reason.empty() ? "" : ": ", reason)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return fail(Error{ErrorKind::kUnavailable, "wait_timeout",
                        fmt::format("instance {} is still {} after {}", id, state,
                                    format_duration(timeout.count()))});
    }
    std::this_thread::sleep_for(kWaitPollInterval);
    GPURENT_TRY(fresh, api.get_instance(id));
    instance = std::move(fresh);
  }
}

Status launch(Context& ctx, const LaunchOptions& options) {
  model::InstanceSpec spec;
  spec.name = options.name;
  spec.template_name = options.template_name;
  spec.image = options.image;
  spec.services = options.services;
  spec.gpu_types = parse_gpu_types(options.gpu);
  spec.gpu_count = options.count;
  spec.gpu_milli = options.gpu_milli;
  spec.gpu_memory_gb = options.gpu_memory_gb;
  spec.min_gpu_memory_gb = options.min_gpu_memory_gb;
  spec.cpu = options.cpu;
  spec.memory_gb = options.memory_gb;
  spec.disk_gb = options.disk_gb;
  for (const auto& label : options.selector) {
    const auto equals = label.find('=');
    if (equals == 0 || equals == std::string::npos) {
      return fail(
          Error::invalid("invalid_selector", fmt::format("'{}' is not label=value", label)));
    }
    spec.node_selector.insert_or_assign(label.substr(0, equals), label.substr(equals + 1));
  }
  if (options.spot) spec.pricing = model::PricingModel::kSpot;
  spec.priority = options.priority;
  spec.queue = !options.no_queue;
  spec.command = options.command;
  for (const auto& assignment : options.env) {
    GPURENT_TRY(variable, parse_env_assignment(assignment));
    spec.env.insert_or_assign(std::move(variable.first), std::move(variable.second));
  }
  GPURENT_TRY(volumes, parse_volume_mounts(options.volumes));
  spec.volumes = std::move(volumes);
  std::optional<std::chrono::seconds> wait_timeout;
  if (options.wait) {
    GPURENT_TRY(seconds, parse_duration_seconds(options.wait_timeout));
    wait_timeout = std::chrono::seconds(seconds);
  }
  GPURENT_TRY(runtime, parse_runtime(options.runtime, options.template_name));
  GPURENT_TRY(api, ctx.api());
  Result<Json> instance = api->create_instance(spec, options.idempotency_key, runtime);
  if (instance && wait_timeout) {
    instance = wait_until_running(ctx, *api, std::move(*instance), *wait_timeout);
  }
  return ctx.show(std::move(instance),
                  [&ctx](const Json& value) { return instance_view(value, ctx.now()); });
}

struct ListOptions {
  bool all = false;
  std::string tenant;
  std::string state;
};

Status list(Context& ctx, const ListOptions& options) {
  GPURENT_TRY(api, ctx.api());
  GPURENT_TRY(items, api->list_instances({.tenant_id = options.tenant, .state = options.state}));
  // Terminated instances only pile up; they are shown when asked for.
  Json shown = Json::array();
  for (auto& item : items) {
    if (options.all || !options.state.empty() || field_text(item, "state") != "terminated") {
      shown.push_back(std::move(item));
    }
  }
  return ctx.show(std::move(shown),
                  [&ctx](const Json& value) { return instances_view(value, ctx.now()); });
}

Status logs(Context& ctx, const std::string& id, bool follow) {
  GPURENT_TRY(api, ctx.api());
  return api->stream_logs(id, follow, [&ctx](std::string_view piece) {
    ctx.out().write(piece.data(), static_cast<std::streamsize>(piece.size()));
    ctx.out().flush();
    return static_cast<bool>(ctx.out());
  });
}

using InstanceAction = Result<Json> (client::ApiClient::*)(std::string_view);

void add_action(CLI::App& parent, Context& ctx, const char* name, const char* description,
                InstanceAction action) {
  auto id = std::make_shared<std::string>();
  auto* command = parent.add_subcommand(name, description);
  command->add_option("id", *id, "instance id")->required();
  command->callback([&ctx, id, action] {
    ctx.set_command([&ctx, id, action] {
      return ctx.call_and_show([&](client::ApiClient& api) { return (api.*action)(*id); },
                               [](const Json& instance) {
                                 return fmt::format("{}   {}\n",
                                                    sanitize(field_text(instance, "id")),
                                                    sanitize(field_text(instance, "state")));
                               });
    });
  });
}

// Registers the verbs on `parent`; list_name is "ls" under `instances` and "ps" at the top.
void add_verbs(CLI::App& parent, Context& ctx, const char* list_name, const std::string& group) {
  std::vector<CLI::App*> added;

  auto launch_options = std::make_shared<LaunchOptions>();
  auto* launch_command = parent.add_subcommand(
      "launch", "Launch an instance: launch --gpu h100-80g [--count 2] -- python3 train.py");
  launch_command
      ->add_option("--gpu", launch_options->gpu, "GPU type (see `gpurent offers`), a,b,... or any")
      ->required();
  launch_command->add_option("--count", launch_options->count, "number of GPUs (1..8)")
      ->capture_default_str();
  launch_command->add_option("--gpu-milli", launch_options->gpu_milli,
                             "share of one GPU in 1/1000 (1..999: the shared tier)");
  launch_command->add_option("--gpu-memory", launch_options->gpu_memory_gb,
                             "GPU memory in GB needed by a GPU share");
  launch_command->add_option("--min-gpu-memory", launch_options->min_gpu_memory_gb,
                             "with --gpu any: only GPUs with at least this many GB");
  launch_command->add_option("--disk", launch_options->disk_gb, "disk in GB");
  launch_command->add_option("--selector", launch_options->selector,
                             "label=value the node must carry; repeat");
  launch_command->add_flag("--spot", launch_options->spot,
                           "spot pricing: cheaper, may be preempted by on-demand work");
  launch_command->add_option("--priority", launch_options->priority,
                             "-100..100: order among your own queued instances");
  launch_command->add_flag("--no-queue", launch_options->no_queue,
                           "fail at once, with the reason, if it cannot be placed now");
  launch_command->add_option("--name", launch_options->name, "a name for the instance");
  launch_command->add_option(
      "--image", launch_options->image,
      "run in this container image (nodes with a container engine); without a command, the "
      "image's own");
  add_template_options(*launch_command, launch_options->template_name, launch_options->runtime);
  launch_command
      ->add_option("--service", launch_options->services,
                   "an HTTP service the command serves on $GPURENT_PORT_<NAME>, reached through "
                   "the server at /i/<id>/<name>/ (gpurent jupyter); repeat")
      ->allow_extra_args(false);
  launch_command->add_option("--cpu", launch_options->cpu, "CPU cores");
  launch_command->add_option("--memory", launch_options->memory_gb, "memory in GB");
  launch_command->add_option("--env", launch_options->env, "NAME=value for the process; repeat")
      ->allow_extra_args(false);
  launch_command
      ->add_option("--volume", launch_options->volumes,
                   "VOLUME_ID:/mount/path: mount one of your volumes (gpurent volumes); repeat")
      ->allow_extra_args(false);
  launch_command->add_option("--idempotency-key", launch_options->idempotency_key,
                             "a retry with the same key returns the first instance");
  launch_command->add_flag("--wait", launch_options->wait,
                           "wait until the instance runs, or fail if it cannot");
  launch_command
      ->add_option("--wait-timeout", launch_options->wait_timeout,
                   "how long --wait waits (e.g. 90s, 10m)")
      ->capture_default_str();
  launch_command->add_option("command", launch_options->command,
                             "the command and its arguments, after --");
  launch_command->callback([&ctx, launch_options] {
    ctx.set_command([&ctx, launch_options] { return launch(ctx, *launch_options); });
  });
  added.push_back(launch_command);

  auto list_options = std::make_shared<ListOptions>();
  auto* list_command = parent.add_subcommand(list_name, "List instances (not terminated ones)");
  list_command->add_flag("-a,--all", list_options->all, "include terminated instances");
  list_command->add_option("--tenant", list_options->tenant, "only this tenant's (operators)");
  list_command->add_option("--state", list_options->state, "only instances in this state");
  list_command->callback([&ctx, list_options] {
    ctx.set_command([&ctx, list_options] { return list(ctx, *list_options); });
  });
  added.push_back(list_command);

  auto show_id = std::make_shared<std::string>();
  auto* show_command = parent.add_subcommand("show", "Show one instance");
  show_command->add_option("id", *show_id, "instance id")->required();
  show_command->callback([&ctx, show_id] {
    ctx.set_command([&ctx, show_id] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.get_instance(*show_id); },
          [&ctx](const Json& value) { return instance_view(value, ctx.now()); });
    });
  });
  added.push_back(show_command);

  auto logs_id = std::make_shared<std::string>();
  auto follow = std::make_shared<bool>(false);
  auto* logs_command = parent.add_subcommand("logs", "Print an instance's output");
  logs_command->add_option("id", *logs_id, "instance id")->required();
  logs_command->add_flag("-f,--follow", *follow, "keep printing until the instance ends");
  logs_command->callback([&ctx, logs_id, follow] {
    ctx.set_command([&ctx, logs_id, follow] { return logs(ctx, *logs_id, *follow); });
  });
  added.push_back(logs_command);

  add_action(parent, ctx, "stop", "Stop an instance (it keeps its settings; start it again)",
             &client::ApiClient::stop_instance);
  add_action(parent, ctx, "start", "Start a stopped instance again",
             &client::ApiClient::start_instance);
  add_action(parent, ctx, "rm", "Terminate an instance for good",
             &client::ApiClient::delete_instance);
  for (const char* name : {"stop", "start", "rm"}) added.push_back(parent.get_subcommand(name));

  if (!group.empty()) {
    for (auto* command : added) command->group(group);
  }
}

}  // namespace

void add_instance_commands(CLI::App& app, Context& ctx) {
  auto* instances = app.add_subcommand("instances", "Rented GPU instances")->group("Instances");
  instances->require_subcommand(1);
  add_verbs(*instances, ctx, "ls", "");
  add_verbs(app, ctx, "ps", "Instances");
}

}  // namespace gpurent::cli
