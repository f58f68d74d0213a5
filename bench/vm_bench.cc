// VM launch through the VM runtime (issue 31, "Benchmark"): --launches VMs one after the other,
// each from the node's kernel+initrd image running `true`, timed from before VmRuntime::start()
// to (1) start()'s return (QEMU has daemonized: what the agent reports as running), (2) the
// guest's "GPURENT_BOOTED" on its console (its /init is running the command), (3) the run's
// exit seen by poll() (polled every 10 ms). Prints p50 / p99 / max of each, and the accelerator.
//
// Usage: gpurent_vm_bench IMAGE_DIR [--launches N] [--kvm]
//   IMAGE_DIR: what scripts/vm-test-image.sh prints (vmlinuz, initrd.gz).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "agent/vm/vm_runtime.h"
#include "common/files.h"

namespace {

using gpurent::agent::VmRuntime;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string summary(std::vector<double> values) {
  std::ranges::sort(values);
  const auto at = [&](double q) {
    return values[std::min(values.size() - 1,
                           static_cast<size_t>(q * static_cast<double>(values.size())))];
  };
  return fmt::format("{:.0f} ms | {:.0f} ms | {:.0f} ms", at(0.5), at(0.99), values.back());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: {} IMAGE_DIR [--launches N] [--kvm]\n", argv[0]);
    return 2;
  }
  const fs::path image = argv[1];
  int launches = 20;
  bool kvm = false;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--launches" && i + 1 < argc) launches = std::stoi(argv[++i]);
    if (arg == "--kvm") kvm = true;
  }
  const fs::path dir = fs::path("/tmp") / "gpurent-vm-bench";
  fs::remove_all(dir);
  auto runtime = VmRuntime::open({.data_dir = dir / "data",
                                  .instances_dir = dir / "instances",
                                  .kernel = image / "vmlinuz",
                                  .initrd = image / "initrd.gz",
                                  .accelerator = kvm ? gpurent::agent::VmAccelerator::kKvm
                                                     : gpurent::agent::VmAccelerator::kTcg,
                                  .default_memory_mb = 256});
  if (!runtime) {
    fmt::print(stderr, "{}\n", runtime.error().message);
    return 1;
  }
  std::vector<double> started, booted, ended;
  for (int i = 0; i < launches; ++i) {
    gpurent::model::WorkloadSpec spec;
    spec.instance_id = fmt::format("i-bench{}", i);
    spec.run = 1;
    spec.command = {"true"};
    const auto t0 = Clock::now();
    if (auto ok = (*runtime)->start(spec); !ok) {
      fmt::print(stderr, "start: {}\n", ok.error().message);
      return 1;
    }
    started.push_back(ms_since(t0));
    const gpurent::agent::WorkloadKey key{spec.instance_id, 1};
    const fs::path log = (*runtime)->find(key)->log_path;
    bool seen_boot = false;
    for (;;) {
      if (!seen_boot &&
          gpurent::read_file(log).value_or("").find("GPURENT_BOOTED") != std::string::npos) {
        booted.push_back(ms_since(t0));
        seen_boot = true;
      }
      (*runtime)->poll();
      if ((*runtime)->find(key)->phase == gpurent::model::WorkloadPhase::kExited) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ended.push_back(ms_since(t0));
    if (!seen_boot) booted.push_back(ended.back());
    if (auto forgotten = (*runtime)->forget(key); !forgotten) {
      fmt::print(stderr, "forget: {}\n", forgotten.error().message);
      return 1;
    }
  }
  fs::remove_all(dir);
  fmt::print("| VM launch ({}, {} launches, 256 MiB, 1 vCPU) | p50 | p99 | max |\n",
             kvm ? "KVM" : "TCG", launches);
  fmt::print("| --- | --- | --- | --- |\n");
  fmt::print("| start() returns (QEMU daemonized: reported running) | {} |\n", summary(started));
  fmt::print("| the guest's init runs the command (GPURENT_BOOTED) | {} |\n", summary(booted));
  fmt::print("| the run's exit seen (command `true`, guest powered off) | {} |\n", summary(ended));
  return 0;
}
