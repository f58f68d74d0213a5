// The `gpurent` command line: the client commands (REST calls to a server) and the process roles
// of the one binary (server, dev, agent, and the hidden workload shim).
//
// Contract:
//   - Connection settings come from flags > environment > config file (see config.h).
//   - `-o table` (default) prints aligned tables for people; `-o json` prints the API's JSON
//     pretty-printed: for lists the items array (all pages joined; `ps` filtered as its table
//     is), for everything else the object the server answered. Nothing else goes to stdout, so
//     `-o json` output can be piped to jq. Progress and errors go to stderr.
//   - Exit codes: 0 success, 1 API or transport error ("error: <detail> (<code>)" on stderr),
//     2 usage error. Process roles return their own exit code.
#pragma once

#include <string_view>

#include "cli/context.h"

namespace gpurent::cli {

inline constexpr std::string_view kVersion = "0.1.0";

// Parses argv (argv[0] is the program name) and runs what it names, with explicit streams and
// environment so tests can run the CLI in-process.
int run(int argc, const char* const* argv, const Io& io);

// The process entry point: `gpurent __shim ...` goes to the agent's workload shim before any
// parsing, everything else to run() with the real streams and environment.
int main(int argc, char** argv);

}  // namespace gpurent::cli
