#include "cli/completion.h"

#include <fmt/format.h>

#include <CLI/App.hpp>
#include <memory>

#include "cli/args.h"
#include "cli/context.h"

namespace gpurent::cli {
namespace {

// Hidden commands (CLI11: an empty group) and the process-internal ones are not offered.
bool offered(const CLI::App* command) {
  return !command->get_group().empty() && !command->get_name().starts_with("__");
}

const CLI::App* subcommand_named(const CLI::App& parent, std::string_view name) {
  const auto found = parent.get_subcommands([&](const CLI::App* command) {
    return offered(command) && command->check_name(std::string(name));
  });
  return found.empty() ? nullptr : found.front();
}

// The flag `word` names on `command` or a command above it (the global flags fall through).
const CLI::Option* flag_named(const CLI::App* command, std::string_view word) {
  for (; command != nullptr; command = command->get_parent()) {
    const auto found = command->get_options([&](const CLI::Option* option) {
      return option->nonpositional() && option->check_name(std::string(word));
    });
    if (!found.empty()) return found.front();
  }
  return nullptr;
}

std::vector<std::string> flags_of(const CLI::App* command) {
  std::vector<std::string> flags;
  for (; command != nullptr; command = command->get_parent()) {
    for (const CLI::Option* option : command->get_options()) {
      if (option->get_group().empty()) continue;  // hidden
      for (const auto& name : option->get_lnames()) flags.push_back("--" + name);
    }
  }
  return flags;
}

constexpr std::string_view kBash =
    R"(# gpurent completion for bash: source <(gpurent completion bash)
_gpurent() {
  local IFS=$'\n'
  COMPREPLY=($(gpurent __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _gpurent gpurent
)";

constexpr std::string_view kZsh = R"(#compdef gpurent
# gpurent completion for zsh: source <(gpurent completion zsh), or save it as _gpurent on $fpath
_gpurent() {
  local -a candidates
  candidates=("${(@f)$(gpurent __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  compadd -a candidates
}
if (( $+functions[compdef] )); then compdef _gpurent gpurent; fi
)";

constexpr std::string_view kFish =
    R"(# gpurent completion for fish: gpurent completion fish | source
complete -c gpurent -f -a '(gpurent __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
)";

}  // namespace

std::vector<std::string> completions(const CLI::App& app, std::span<const std::string> words,
                                     std::string_view current) {
  const CLI::App* command = &app;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == "--") return {};
    if (word.starts_with('-')) {
      // "--gpu h100-80g": the next word is the flag's value, not a command.
      const CLI::Option* flag = flag_named(command, word);
      if (flag && word.find('=') == std::string::npos && flag->get_type_size_max() > 0) {
        if (i + 1 == words.size()) return {};  // `current` is that value
        ++i;
      }
      continue;
    }
    if (const CLI::App* sub = subcommand_named(*command, word)) command = sub;
  }
  std::vector<std::string> names;
  if (current.starts_with('-')) {
    names = flags_of(command);
  } else {
    for (const CLI::App* sub : command->get_subcommands(offered)) names.push_back(sub->get_name());
  }
  std::vector<std::string> matching;
  for (auto& name : names) {
    if (name.starts_with(current)) matching.push_back(std::move(name));
  }
  return matching;
}

std::optional<std::string> completion_script(std::string_view shell) {
  if (shell == "bash") return std::string(kBash);
  if (shell == "zsh") return std::string(kZsh);
  if (shell == "fish") return std::string(kFish);
  return std::nullopt;
}

void add_completion_commands(CLI::App& app, Context& ctx) {
  auto shell = std::make_shared<std::string>();
  auto* completion =
      app.add_subcommand("completion",
                         "Print the shell completion script: source <(gpurent completion bash)")
          ->group("Other");
  completion->add_option("shell", *shell, "bash, zsh or fish")->required();
  completion->callback([&ctx, shell] {
    ctx.set_command([&ctx, shell]() -> Status {
      const auto script = completion_script(*shell);
      if (!script) {
        return fail(usage_error(fmt::format("no completion for '{}': bash, zsh or fish", *shell)));
      }
      ctx.out() << *script;
      return {};
    });
  });
}

}  // namespace gpurent::cli
