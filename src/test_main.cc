// main() of the unit test binary. `gpurent_unit_tests __shim ...` acts as the workload shim, the
// way `gpurent __shim ...` does, so runtime tests exercise the real supervision path.
#include <cstring>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "agent/agent.h"
#include "common/assert.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "__shim") == 0) {
    return gpurent::agent::run_workload_shim(argc - 1, argv + 1);
  }
  testing::InitGoogleTest(&argc, argv);
  gpurent::set_expensive_checks(true);
  // The engines log every placement and run; in tests only warnings and errors are worth reading.
  spdlog::set_level(spdlog::level::warn);
  return RUN_ALL_TESTS();
}
