// jupyter (any service of an instance, in the browser) and exec (a command in a running instance).
#include <spawn.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/views.h"

extern char** environ;

namespace gpurent::cli {
namespace {

// Starts `xdg-open url` and waits for it (it hands the URL to the desktop's browser and returns).
Status open_in_browser(const std::string& url) {
  std::string program = "xdg-open";
  std::string argument = url;
  char* argv[] = {program.data(), argument.data(), nullptr};
  pid_t pid = 0;
  if (const int error = ::posix_spawnp(&pid, argv[0], nullptr, nullptr, argv, environ);
      error != 0) {
    return fail(Error::internal(fmt::format("cannot run xdg-open: {}", std::strerror(error))));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fail(Error::internal("xdg-open failed; open the URL above yourself"));
  }
  return {};
}

Status jupyter(Context& ctx, const std::string& id, const std::string& service, bool open) {
  GPURENT_TRY(api, ctx.api());
  GPURENT_TRY(ticket, api->instances().service_ticket(id, service));
  const std::string url = api->base_url() + ticket.value.path;
  ctx.out() << url << "\n" << std::flush;
  if (open) GPURENT_CHECK(open_in_browser(url));
  return {};
}

// Streams the command's output to stdout and stderr; the process exits with its exit status.
int exec(Context& ctx, const std::string& id, const model::ExecRequest& request) {
  auto api = ctx.api();
  if (!api) return ctx.report(api.error());
  auto exit = (*api)->instances().exec(id, request, [&ctx](const model::ExecFrame& frame) {
    auto& stream = frame.kind == model::ExecFrame::Kind::kStdout ? ctx.out() : ctx.err();
    stream.write(frame.data.data(), static_cast<std::streamsize>(frame.data.size()));
    stream.flush();
  });
  if (!exit) return ctx.report(exit.error());
  if (!exit->error.empty()) ctx.err() << fmt::format("gpurent exec: {}\n", sanitize(exit->error));
  return exit->exit_code;
}

}  // namespace

void add_service_commands(CLI::App& app, Context& ctx) {
  auto jupyter_id = std::make_shared<std::string>();
  auto service = std::make_shared<std::string>("jupyter");
  auto open = std::make_shared<bool>(false);
  auto* jupyter_command = app.add_subcommand(
      "jupyter", "Print the URL of an instance's Jupyter (or another service) for a browser");
  jupyter_command->add_option("id", *jupyter_id, "instance id")->required();
  jupyter_command->add_option("--service", *service, "the service to open")->capture_default_str();
  jupyter_command->add_flag("--open", *open, "open it with xdg-open too");
  jupyter_command->callback([&ctx, jupyter_id, service, open] {
    ctx.set_command(
        [&ctx, jupyter_id, service, open] { return jupyter(ctx, *jupyter_id, *service, *open); });
  });

  auto exec_id = std::make_shared<std::string>();
  auto request = std::make_shared<model::ExecRequest>();
  auto* exec_command = app.add_subcommand(
      "exec", "Run a command in a running instance and stream its output; exits with its status");
  exec_command->add_option("id", *exec_id, "instance id")->required();
  exec_command->add_option("--timeout", request->timeout_s, "seconds before the command is killed")
      ->check(CLI::Range(1, model::kMaxExecTimeoutS))
      ->capture_default_str();
  exec_command->add_option("command", request->command, "the command and its arguments, after --")
      ->required();
  exec_command->callback([&ctx, exec_id, request] {
    ctx.set_process([&ctx, exec_id, request] { return exec(ctx, *exec_id, *request); });
  });
}

}  // namespace gpurent::cli
