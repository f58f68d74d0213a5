// launch, ps, show, logs, stop, start, rm: under `instances` and as short forms at the top.
#include <fmt/format.h>

#include <CLI/App.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/instance_wait.h"
#include "cli/launch_options.h"
#include "cli/output.h"
#include "cli/views.h"
#include "cli/workdir.h"

namespace gpurent::cli {
namespace {

struct LaunchFlags {
  LaunchOptions request;
  std::string workdir;
  std::string idempotency_key;
  bool wait = false;
  std::string wait_timeout = "10m";
};

Status launch(Context& ctx, const LaunchFlags& options) {
  GPURENT_TRY(request, launch_request(options.request));
  std::optional<std::chrono::seconds> wait_timeout;
  if (options.wait) {
    GPURENT_TRY(seconds, parse_duration_seconds(options.wait_timeout));
    wait_timeout = std::chrono::seconds(seconds);
  }
  GPURENT_TRY(api, ctx.api());
  if (!options.workdir.empty()) {
    GPURENT_TRY(workdir, upload_workdir(ctx, *api, options.workdir));
    request.spec.workdir = std::move(workdir);
  }
  auto instance = api->instances().create(request.spec, options.idempotency_key, request.runtime);
  if (instance && wait_timeout) {
    instance = wait_until(ctx, *api, std::move(*instance), kRunning, *wait_timeout);
  }
  return ctx.show(std::move(instance),
                  [&ctx](const auto& value) { return instance_view(value, ctx.now()); });
}

struct ListOptions {
  bool all = false;
  std::string tenant;
  std::string state;
};

Status list(Context& ctx, const ListOptions& options) {
  GPURENT_TRY(api, ctx.api());
  GPURENT_TRY(listed, api->instances().list({.tenant_id = options.tenant, .state = options.state}));
  // Terminated instances only pile up; they are shown when asked for. (The typed items are the
  // JSON's, one for one.)
  client::Answer<std::vector<api::Instance>> shown{{}, Json::array()};
  for (size_t i = 0; i < listed.value.size(); ++i) {
    if (options.all || !options.state.empty() ||
        listed.value[i].state != model::InstanceState::kTerminated) {
      shown.value.push_back(std::move(listed.value[i]));
      shown.json.push_back(std::move(listed.json[i]));
    }
  }
  return ctx.show(Result<client::Answer<std::vector<api::Instance>>>(std::move(shown)),
                  [&ctx](const auto& value) { return instances_view(value, ctx.now()); });
}

Status logs(Context& ctx, const std::string& id, bool follow) {
  GPURENT_TRY(api, ctx.api());
  return api->instances().stream_logs(id, follow, [&ctx](std::string_view piece) {
    ctx.out().write(piece.data(), static_cast<std::streamsize>(piece.size()));
    ctx.out().flush();
    return static_cast<bool>(ctx.out());
  });
}

struct ActionFlags {
  std::string id;
  bool wait = false;
  std::string wait_timeout = "10m";
  bool anywhere = false;  // start only
};

using InstanceAction =
    std::function<Result<client::Answer<api::Instance>>(client::InstancesApi, const ActionFlags&)>;

// The action's flags are filled in when the command line is parsed.
CLI::App* add_action(CLI::App& parent, Context& ctx, const char* name, const char* description,
                     InstanceAction action, const Goal& goal,
                     const std::shared_ptr<ActionFlags>& flags) {
  auto* command = parent.add_subcommand(name, description);
  command->add_option("id", flags->id, "instance id")->required();
  command->add_flag("--wait", flags->wait,
                    fmt::format("wait until the instance is {} (progress on stderr)", goal.name));
  command->add_option("--wait-timeout", flags->wait_timeout, "how long --wait waits (e.g. 90s)")
      ->capture_default_str();
  command->callback([&ctx, flags, action, &goal] {
    ctx.set_command([&ctx, flags, action, &goal]() -> Status {
      GPURENT_TRY(timeout, parse_duration_seconds(flags->wait_timeout));
      return ctx.call_and_show(
          [&](client::ApiClient& api) -> Result<client::Answer<api::Instance>> {
            GPURENT_TRY(instance, action(api.instances(), *flags));
            if (!flags->wait) return instance;
            return wait_until(ctx, api, std::move(instance), goal, std::chrono::seconds(timeout));
          },
          [](const api::Instance& instance) {
            return fmt::format("{}   {}\n", sanitize(instance.id),
                               sanitize(model::to_string(instance.state)));
          });
    });
  });
  return command;
}

// Registers the verbs on `parent`; list_name is "ls" under `instances` and "ps" at the top.
void add_verbs(CLI::App& parent, Context& ctx, const char* list_name, const std::string& group) {
  std::vector<CLI::App*> added;

  auto launch_options = std::make_shared<LaunchFlags>();
  auto* launch_command = parent.add_subcommand(
      "launch", "Launch an instance: launch --gpu h100-80g [--count 2] -- python3 train.py");
  add_launch_options(*launch_command, launch_options->request);
  launch_command->add_option("--workdir", launch_options->workdir,
                             "a local directory, unpacked into the instance's home before the "
                             "command starts (at most 256 MiB packed; .gpurentignore lists what "
                             "to leave out)");
  launch_command->add_option("--idempotency-key", launch_options->idempotency_key,
                             "a retry with the same key returns the first instance");
  launch_command->add_flag("--wait", launch_options->wait,
                           "wait until the instance runs, or fail if it cannot");
  launch_command
      ->add_option("--wait-timeout", launch_options->wait_timeout,
                   "how long --wait waits (e.g. 90s, 10m)")
      ->capture_default_str();
  launch_command->callback([&ctx, launch_options] {
    ctx.set_command([&ctx, launch_options] { return launch(ctx, *launch_options); });
  });
  added.push_back(launch_command);

  auto list_options = std::make_shared<ListOptions>();
  auto* list_command = parent.add_subcommand(list_name, "List instances (not terminated ones)");
  list_command->add_flag("-a,--all", list_options->all, "include terminated instances");
  list_command->add_option("--tenant", list_options->tenant, "only this tenant's (operators)");
  list_command->add_option("--state", list_options->state, "only instances in this state");
  ctx.add_watch_option(*list_command);
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
          [&](client::ApiClient& api) { return api.instances().get(*show_id); },
          [&ctx](const auto& value) { return instance_view(value, ctx.now()); });
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

  added.push_back(add_action(
      parent, ctx, "stop", "Stop an instance (it keeps its settings and files; start it again)",
      [](client::InstancesApi api, const ActionFlags& flags) { return api.stop(flags.id); },
      kStopped, std::make_shared<ActionFlags>()));
  auto start_flags = std::make_shared<ActionFlags>();
  auto* start_command = add_action(
      parent, ctx, "start",
      "Start a stopped instance again, on the node that keeps its files (one still stopping "
      "starts once it has stopped)",
      [](client::InstancesApi api, const ActionFlags& flags) {
        return api.start(flags.id, flags.anywhere);
      },
      kRunning, start_flags);
  start_command->add_flag("--anywhere", start_flags->anywhere,
                          "start it on any node that fits, without its files (the node that "
                          "keeps them deletes them); frees a start waiting for its node");
  added.push_back(start_command);
  added.push_back(add_action(
      parent, ctx, "rm", "Terminate an instance for good",
      [](client::InstancesApi api, const ActionFlags& flags) { return api.remove(flags.id); },
      kTerminated, std::make_shared<ActionFlags>()));

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
