// job submit, ls, show, logs, cancel: batch work that runs a command to completion.
#include <fmt/format.h>

#include <CLI/App.hpp>
#include <memory>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/launch_options.h"
#include "cli/output.h"
#include "cli/views.h"
#include "cli/workdir.h"

namespace gpurent::cli {
namespace {

struct SubmitOptions {
  std::string gpu;
  int count = 1;
  int nodes = 1;
  int array = 1;
  int retries = 0;
  std::string max_runtime;
  bool spot = false;
  int priority = 0;
  QueueingOptions queueing;
  std::string name;
  std::string template_name;
  std::string runtime = "auto";
  std::string image;
  std::vector<std::string> env;
  std::vector<std::string> volumes;  // VOLUME_ID:/mount/path
  std::string workdir;
  std::string idempotency_key;
  std::vector<std::string> command;
};

Result<model::JobSpec> job_spec(const SubmitOptions& options) {
  if (options.command.empty()) {
    return fail(usage_error("a job needs a command: job submit --gpu TYPE -- command ..."));
  }
  model::JobSpec spec;
  spec.nodes = options.nodes;
  spec.array = options.array;
  spec.retries = options.retries;
  model::InstanceSpec& task = spec.task;
  task.name = options.name;
  task.template_name = options.template_name;
  task.image = options.image;
  task.gpu_types = parse_gpu_types(options.gpu);
  task.gpu_count = options.count;
  if (options.spot) task.pricing = model::PricingModel::kSpot;
  task.priority = options.priority;
  GPURENT_CHECK(apply_queueing(options.queueing, task));
  task.command = options.command;
  if (!options.max_runtime.empty()) {
    GPURENT_TRY(seconds, parse_duration_seconds(options.max_runtime));
    task.max_runtime_s = seconds;
  }
  for (const auto& assignment : options.env) {
    GPURENT_TRY(variable, parse_env_assignment(assignment));
    task.env.insert_or_assign(std::move(variable.first), std::move(variable.second));
  }
  GPURENT_TRY(volumes, parse_volume_mounts(options.volumes));
  task.volumes = std::move(volumes);
  return spec;
}

Status submit(Context& ctx, const SubmitOptions& options) {
  GPURENT_TRY(spec, job_spec(options));
  GPURENT_TRY(runtime, parse_runtime(options.runtime, options.template_name));
  GPURENT_TRY(api, ctx.api());
  if (!options.workdir.empty()) {
    GPURENT_TRY(workdir, upload_workdir(ctx, *api, options.workdir));
    spec.task.workdir = std::move(workdir);
  }
  return ctx.show(api->jobs().create(spec, options.idempotency_key, runtime),
                  [&ctx](const auto& value) { return job_view(value, ctx.now()); });
}

struct LogsOptions {
  std::string id;
  client::JobMember member;
  bool follow = false;
};

Status logs(Context& ctx, const LogsOptions& options) {
  GPURENT_TRY(api, ctx.api());
  return api->jobs().stream_logs(
      options.id, options.member, options.follow, [&ctx](std::string_view piece) {
        ctx.out().write(piece.data(), static_cast<std::streamsize>(piece.size()));
        ctx.out().flush();
        return static_cast<bool>(ctx.out());
      });
}

void add_submit(CLI::App& jobs, Context& ctx) {
  auto options = std::make_shared<SubmitOptions>();
  auto* submit_command = jobs.add_subcommand(
      "submit", "Submit a job: submit --gpu h100-80g [--array 4] [--nodes 2] -- python3 train.py");
  submit_command->add_option("--gpu", options->gpu, "GPU type, a,b,... or any")->required();
  submit_command
      ->add_option("--count", options->count,
                   "GPUs on each node (1..8): a task of --nodes 2 --count 8 holds 16 GPUs")
      ->capture_default_str();
  submit_command
      ->add_option("--nodes", options->nodes,
                   "nodes per task, started together (a gang), each with --count GPUs")
      ->capture_default_str();
  submit_command->add_option("--array", options->array, "tasks, each with GPURENT_ARRAY_INDEX")
      ->capture_default_str();
  submit_command->add_option("--retries", options->retries, "runs again a failed task this often")
      ->capture_default_str();
  submit_command->add_option("--max-runtime", options->max_runtime,
                             "limit per run (e.g. 90m); lets the job backfill");
  submit_command->add_flag("--spot", options->spot, "spot pricing: cheaper, may be preempted");
  submit_command->add_option("--priority", options->priority,
                             "-100..100: order among your own queued work");
  add_queueing_options(*submit_command, options->queueing);
  submit_command->add_option("--name", options->name, "a name for the job");
  add_template_options(*submit_command, options->template_name, options->runtime);
  submit_command->add_option("--image", options->image,
                             "run in this container image (nodes with a container engine)");
  submit_command->add_option("--env", options->env, "NAME=value for the processes; repeat")
      ->allow_extra_args(false);
  submit_command
      ->add_option("--volume", options->volumes,
                   "VOLUME_ID:/mount/path: mount one of your volumes in every task (the job then "
                   "runs on the volume's node, --nodes 1); repeat")
      ->allow_extra_args(false);
  submit_command->add_option("--workdir", options->workdir,
                             "a local directory, unpacked into every task's home before its "
                             "command starts (at most 256 MiB packed; .gpurentignore lists what "
                             "to leave out)");
  submit_command->add_option("--idempotency-key", options->idempotency_key,
                             "a retry with the same key returns the first job");
  submit_command->add_option("command", options->command, "the command, after --");
  submit_command->callback(
      [&ctx, options] { ctx.set_command([&ctx, options] { return submit(ctx, *options); }); });
}

void add_list_and_show(CLI::App& jobs, Context& ctx) {
  auto tenant = std::make_shared<std::string>();
  auto* list = jobs.add_subcommand("ls", "List jobs");
  list->add_option("--tenant", *tenant, "only this tenant's (operators)");
  ctx.add_watch_option(*list);
  list->callback([&ctx, tenant] {
    ctx.set_command([&ctx, tenant] {
      return ctx.call_and_show([&](client::ApiClient& api) { return api.jobs().list(*tenant); },
                               [&ctx](const auto& value) { return jobs_view(value, ctx.now()); });
    });
  });

  auto id = std::make_shared<std::string>();
  auto all_tasks = std::make_shared<bool>(false);
  auto* show = jobs.add_subcommand("show", "Show one job and its tasks");
  show->add_option("id", *id, "job id")->required();
  show->add_flag("--tasks", *all_tasks, "list every task, even of a large array");
  show->callback([&ctx, id, all_tasks] {
    ctx.set_command([&ctx, id, all_tasks] {
      return ctx.call_and_show(
          [&](client::ApiClient& api) { return api.jobs().get(*id, *all_tasks); },
          [&ctx](const auto& value) { return job_view(value, ctx.now()); });
    });
  });
}

void add_logs_and_cancel(CLI::App& jobs, Context& ctx) {
  auto options = std::make_shared<LogsOptions>();
  auto* logs_command = jobs.add_subcommand("logs", "Print the output of one member of a job");
  logs_command->add_option("id", options->id, "job id")->required();
  logs_command->add_option("--task", options->member.task, "task index (array)")
      ->capture_default_str();
  logs_command->add_option("--rank", options->member.rank, "rank within the task (gang)")
      ->capture_default_str();
  logs_command->add_flag("-f,--follow", options->follow, "keep printing until the member ends");
  logs_command->callback(
      [&ctx, options] { ctx.set_command([&ctx, options] { return logs(ctx, *options); }); });

  auto id = std::make_shared<std::string>();
  auto* cancel = jobs.add_subcommand("cancel", "Cancel a job: queued tasks leave, running stop");
  cancel->add_option("id", *id, "job id")->required();
  cancel->callback([&ctx, id] {
    ctx.set_command([&ctx, id] {
      return ctx.call_and_show([&](client::ApiClient& api) { return api.jobs().cancel(*id); },
                               [](const api::Job& job) {
                                 return fmt::format("{}   {}\n", sanitize(job.id),
                                                    sanitize(model::to_string(job.state)));
                               });
    });
  });
}

}  // namespace

void add_job_commands(CLI::App& app, Context& ctx) {
  auto* jobs = app.add_subcommand("job", "Batch jobs: arrays, gangs, retries")->group("Jobs");
  jobs->alias("jobs");
  jobs->require_subcommand(1);
  add_submit(*jobs, ctx);
  add_list_and_show(*jobs, ctx);
  add_logs_and_cancel(*jobs, ctx);
}

}  // namespace gpurent::cli
