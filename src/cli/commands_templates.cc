// template ls, show, set, rm: the catalog that `launch --template` and `job submit --template`
// start from.
#include <fmt/format.h>

#include <CLI/App.hpp>
#include <memory>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/views.h"

namespace gpurent::cli {
namespace {

struct SetOptions {
  std::string name;
  std::string description;
  std::string image;
  std::string command;          // a shell line, run in the image
  std::string process_command;  // a shell line, run on the host
  std::vector<std::string> env;
  std::vector<std::string> services;
  int recommended_gpu_memory_gb = 0;
};

// The whole template as PUT takes it: what the flags do not name is left empty.
Result<api::TemplateSet> template_body(const SetOptions& options) {
  api::TemplateSet body{.description = options.description,
                        .env = std::map<std::string, std::string>(),
                        .services = options.services,
                        .recommended_gpu_memory_gb = options.recommended_gpu_memory_gb};
  if (!options.image.empty()) body.image = options.image;
  if (!options.command.empty()) body.command = options.command;
  if (!options.process_command.empty()) body.process_command = options.process_command;
  for (const auto& assignment : options.env) {
    GPURENT_TRY(variable, parse_env_assignment(assignment));
    (*body.env)[variable.first] = variable.second;
  }
  return body;
}

Status set_template(Context& ctx, const SetOptions& options) {
  GPURENT_TRY(body, template_body(options));
  GPURENT_TRY(api, ctx.api());
  return ctx.show(api->templates().put(options.name, body), template_view);
}

Status delete_template(Context& ctx, const std::string& name) {
  GPURENT_TRY(api, ctx.api());
  GPURENT_CHECK(api->templates().remove(name));
  return ctx.show(Json{{"name", name}, {"deleted", true}}, [&name](const Json&) {
    return fmt::format("template {} deleted\n", sanitize(name));
  });
}

}  // namespace

void add_template_options(CLI::App& command, std::string& template_name, std::string& runtime) {
  command.add_option("--template", template_name,
                     "start from a template (gpurent template ls): its image, command, env and "
                     "services; your own flags win");
  command
      .add_option("--runtime", runtime,
                  "vm: run in a virtual machine (hard isolation; nodes that run VMs); with "
                  "--template also auto (the node decides), process or container")
      ->capture_default_str();
}

void add_template_commands(CLI::App& app, Context& ctx) {
  auto* templates = app.add_subcommand("template",
                                       "Starting points for instances and jobs: image, command, "
                                       "env, services")
                        ->group("Instances");
  templates->alias("templates");
  templates->require_subcommand(1);

  auto* list = templates->add_subcommand("ls", "The catalog");
  list->alias("list");
  list->callback([&ctx] {
    ctx.set_command([&ctx] {
      return ctx.call_and_show([](client::ApiClient& api) { return api.templates().list(); },
                               templates_view);
    });
  });

  auto name = std::make_shared<std::string>();
  auto* show = templates->add_subcommand("show", "One template in full");
  show->add_option("name", *name, "template name")->required();
  show->callback([&ctx, name] {
    ctx.set_command([&ctx, name] {
      return ctx.call_and_show([&](client::ApiClient& api) { return api.templates().get(*name); },
                               template_view);
    });
  });

  auto options = std::make_shared<SetOptions>();
  auto* set = templates->add_subcommand(
      "set", "Add or replace one of your own templates (operators); flags not given are empty");
  set->add_option("name", options->name, "template name (a-z, 0-9, '-')")->required();
  set->add_option("--description", options->description, "what it is for");
  set->add_option("--image", options->image, "container image (nodes with a container engine)");
  set->add_option("--command", options->command,
                  "shell command run in the image (default: the image's own)");
  set->add_option("--process-command", options->process_command,
                  "shell command run on the host by the process runtime");
  set->add_option("--env", options->env, "NAME=value; repeat");
  set->add_option("--service", options->services,
                  "an HTTP service it serves, proxied at /i/{id}/{service}/; repeat");
  set->add_option("--gpu-memory", options->recommended_gpu_memory_gb,
                  "recommended GPU memory in GB (advice shown in the catalog)");
  set->callback([&ctx, options] {
    ctx.set_command([&ctx, options] { return set_template(ctx, *options); });
  });

  auto remove_name = std::make_shared<std::string>();
  auto* remove = templates->add_subcommand("rm", "Delete one of your own templates (operators)");
  remove->alias("delete");
  remove->add_option("name", *remove_name, "template name")->required();
  remove->callback([&ctx, remove_name] {
    ctx.set_command([&ctx, remove_name] { return delete_template(ctx, *remove_name); });
  });
}

}  // namespace gpurent::cli
