// Shell completion for bash, zsh and fish.
//
// `gpurent completion SHELL` prints a small script that, on TAB, asks the binary itself what may
// come next: `gpurent __complete WORD... CURRENT` prints one candidate per line, the subcommands
// or flags of the command the words name, read from the parser tree that also runs them. A new
// command or flag completes without any script to keep in step.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace gpurent::cli {

class Context;

// What may follow `words` (the complete words after the program name) and starts with `current`
// (the word being typed): flags when it starts with '-', else the subcommands of the command the
// words name. Nothing after `--` (the user's own command follows) or after a flag that takes a
// value (the value is the user's).
std::vector<std::string> completions(const CLI::App& app, std::span<const std::string> words,
                                     std::string_view current);

// The script for `shell` (bash, zsh or fish); nullopt for another.
std::optional<std::string> completion_script(std::string_view shell);

// `gpurent completion SHELL`.
void add_completion_commands(CLI::App& app, Context& ctx);

}  // namespace gpurent::cli
