#include "cli/cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/agent.h"
#include "cli/commands.h"
#include "cli/commands_monitoring.h"
#include "cli/completion.h"

namespace gpurent::cli {
namespace {

// The deepest command given on the command line, when it is a group of verbs.
const CLI::App* chosen_group(const CLI::App& app) {
  const CLI::App* current = &app;
  while (!current->get_subcommands().empty()) current = current->get_subcommands().front();
  const bool has_verbs =
      !const_cast<CLI::App*>(current)->get_subcommands([](CLI::App*) { return true; }).empty();
  return has_verbs ? current : nullptr;
}

// "gpurent alerts rule"
std::string command_path(const CLI::App* command) {
  std::string path = command->get_name();
  for (const CLI::App* up = command->get_parent(); up != nullptr; up = up->get_parent()) {
    path = up->get_name() + " " + path;
  }
  return path;
}

}  // namespace

int run(int argc, const char* const* argv, const Io& io) {
  Context ctx(io);
  CLI::App app("gpurent: rent out GPUs, and rent them.", "gpurent");
  app.add_option("--url", ctx.url_flag(),
                 "server URL, or several of one control plane separated by commas (default: "
                 "$GPURENT_URL, the config file, http://127.0.0.1:8080)");
  app.add_option("--api-key", ctx.api_key_flag(),
                 "API key (default: $GPURENT_API_KEY, the config file)");
  app.add_option("-o,--output", ctx.output_flag(), "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  app.set_version_flag("--version", std::string(kVersion));
  // Subcommands inherit this: the global flags above are accepted after any subcommand.
  app.fallthrough();
  app.require_subcommand(1);

  add_instance_commands(app, ctx);
  add_service_commands(app, ctx);
  add_copy_commands(app, ctx);
  add_catalog_commands(app, ctx);
  add_bench_commands(app, ctx);
  add_billing_commands(app, ctx);
  add_price_commands(app, ctx);
  add_account_commands(app, ctx);
  add_access_commands(app, ctx);
  add_audit_commands(app, ctx);
  add_node_commands(app, ctx);
  add_job_commands(app, ctx);
  add_reservation_commands(app, ctx);
  add_template_commands(app, ctx);
  add_volume_commands(app, ctx);
  add_event_commands(app, ctx);
  add_monitoring_commands(app, ctx);
  add_process_commands(app, ctx);
  add_simulate_commands(app, ctx);
  add_store_commands(app, ctx);
  add_completion_commands(app, ctx);

  // The completion scripts' question (completion.h): what may follow these words.
  if (argc >= 2 && std::string_view(argv[1]) == "__complete") {
    std::vector<std::string> words(argv + 2, argv + argc);
    std::string current;
    if (!words.empty()) {
      current = std::move(words.back());
      words.pop_back();
    }
    for (const auto& candidate : completions(app, words, current)) io.out << candidate << '\n';
    return 0;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A group given without its verb (`gpurent quota`): list what it offers.
    if (const CLI::App* group = chosen_group(app);
        group && dynamic_cast<const CLI::RequiredError*>(&e)) {
      io.err << fmt::format("`{}` needs one of these:\n\n", command_path(group)) << group->help();
      return 2;
    }
    // Help and --version are "errors" with exit code 0; everything else is a usage error.
    app.exit(e, io.out, io.err);
    return e.get_exit_code() == 0 ? 0 : 2;
  }
  return ctx.run();
}

namespace {

std::optional<std::string> terminal_question(std::string_view question) {
  if (!isatty(STDIN_FILENO)) return std::nullopt;
  std::cerr << question << std::flush;
  std::string line;
  if (!std::getline(std::cin, line)) return std::nullopt;
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "__shim") == 0) {
    return agent::run_workload_shim(argc - 1, argv + 1);
  }
  try {
    return run(argc, argv,
               {std::cout, std::cerr, process_environment(), terminal_question,
                isatty(STDOUT_FILENO) == 1});
  } catch (const std::exception& e) {
    // The last stop for anything thrown (allocation failure, a library's surprise): a message
    // and exit code 1 rather than std::terminate.
    std::cerr << "error: " << e.what() << " (internal)\n";
    return 1;
  }
}

}  // namespace gpurent::cli
