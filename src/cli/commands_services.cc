// jupyter (any service of an instance, in the browser), exec (a command in a running instance) and
// ssh (a VM instance's SSH server, through the server: ssh-proxy is the OpenSSH ProxyCommand).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

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

// Relays stdin and stdout to the instance's SSH server until it closes.
int ssh_proxy(Context& ctx, const std::string& id) {
  auto api = ctx.api();
  if (!api) return ctx.report(api.error());
  if (auto tunneled = (*api)->instances().ssh_tunnel(id, STDIN_FILENO, STDOUT_FILENO); !tunneled) {
    return ctx.report(tunneled.error());
  }
  return 0;
}

// Replaces this process with OpenSSH's ssh, logging in as the VM's user through ssh-proxy; the
// proxy (a child of ssh) finds the server and key in the environment.
int ssh(Context& ctx, const std::string& id, const std::vector<std::string>& ssh_arguments) {
  auto settings = ctx.settings();
  if (!settings) return ctx.report(settings.error());
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    return ctx.report(Error::internal(fmt::format("cannot find this program: {}", ec.message())));
  ::setenv("GPURENT_URL", settings->url.c_str(), 1);
  if (!settings->api_key.empty()) ::setenv("GPURENT_API_KEY", settings->api_key.c_str(), 1);
  // Known hosts under the instance's own name: every instance's tunnel has the same endpoint.
  std::vector<std::string> argv = {"ssh",
                                   "-o",
                                   fmt::format("ProxyCommand={} ssh-proxy {}", self.string(), id),
                                   "-o",
                                   fmt::format("HostKeyAlias=gpurent-{}", id),
                                   "-l",
                                   "gpurent",
                                   id};
  argv.insert(argv.end(), ssh_arguments.begin(), ssh_arguments.end());
  std::vector<char*> pointers;
  for (auto& argument : argv) pointers.push_back(argument.data());
  pointers.push_back(nullptr);
  ::execvp("ssh", pointers.data());
  return ctx.report(Error::internal(
      fmt::format("cannot run ssh: {} (install OpenSSH's client)", std::strerror(errno))));
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

  auto ssh_id = std::make_shared<std::string>();
  auto ssh_arguments = std::make_shared<std::vector<std::string>>();
  auto* ssh_command = app.add_subcommand(
      "ssh",
      "Log in to a VM instance booted from a cloud image, as gpurent, with your key "
      "(ssh through the server; arguments after -- go to ssh: a command, -i KEY)");
  ssh_command->add_option("id", *ssh_id, "instance id")->required();
  ssh_command->add_option("ssh_arguments", *ssh_arguments, "ssh's options and command, after --");
  ssh_command->callback([&ctx, ssh_id, ssh_arguments] {
    ctx.set_process([&ctx, ssh_id, ssh_arguments] { return ssh(ctx, *ssh_id, *ssh_arguments); });
  });

  auto proxy_id = std::make_shared<std::string>();
  auto* proxy_command =
      app.add_subcommand("ssh-proxy",
                         "Relay stdin and stdout to a VM instance's SSH server (for ssh's "
                         "ProxyCommand: ssh -o ProxyCommand='gpurent ssh-proxy %h' gpurent@ID)");
  proxy_command->add_option("id", *proxy_id, "instance id")->required();
  proxy_command->callback([&ctx, proxy_id] {
    ctx.set_process([&ctx, proxy_id] { return ssh_proxy(ctx, *proxy_id); });
  });
}

}  // namespace gpurent::cli
