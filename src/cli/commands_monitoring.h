// `gpurent alerts ...` and `gpurent metrics query ...` (commands_monitoring.cc).
#pragma once

#include "cli/context.h"

namespace CLI {
class App;
}

namespace gpurent::cli {

void add_monitoring_commands(CLI::App& app, Context& ctx);

}  // namespace gpurent::cli
