// VM launch through the VM runtime (issue 31, "Benchmark"): --launches VMs one after the other,
// each a new instance from the node's image, timed from before VmRuntime::start() to (1)
// start()'s return (QEMU's monitor answers: what the agent reports as running), (2) the guest's
// "GPURENT_BOOTED" on its console (the command is running: a kernel+initrd image's /init prints
// it before the command `true`; a cloud image's command prints it, after cloud-init's first boot
// of the instance), (3) the run's exit seen by poll() (polled every 10 ms). Then --execs
// `gpurent exec`s of `true` in one running VM through its guest agent (guest_agent.h), each timed
// from the call to its status. Prints p50 / p99 / max of each, the accelerator and the network
// (--isolated: QEMU's restricted user-mode networking instead of passt, the agent's default).
// --shares says how the folders reach the guest (9p, the agent's default, or virtiofs). With
// --share-mb N, one more run writes N MiB into /workspace with dd, syncs, drops the guest's page
// cache and reads the file back, then does the same in the guest's own memory (/tmp: the
// initramfs, or a cloud image's tmpfs), each timed on the host between the markers the guest
// prints on its console (polled every 2 ms): the shared folder's speed against the guest's own.
//
// Run as root, QEMU is confined as a root agent's is (its user, its view; docs/vm-runtime.md,
// "QEMU confined"); --unconfined runs it as the bench, as an agent without a sandbox does.
//
// Usage: gpurent_vm_bench IMAGE [--launches N] [--execs N] [--kvm] [--isolated]
//                               [--shares 9p|virtiofs] [--share-mb N] [--unconfined]
//   IMAGE: what scripts/vm-test-image.sh prints (a directory: vmlinuz, initrd.gz), or a cloud
//   image (a qcow2 file: scripts/vm-cloud-image.sh).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "agent/vm/guest_agent.h"
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

// The guest's dd through its shared /workspace and through its own /tmp, each timed between the
// markers it prints: "<what> (MiB/s)" for each.
gpurent::Result<std::vector<std::pair<std::string, double>>> share_throughput(VmRuntime& runtime,
                                                                              int mib) {
  gpurent::model::WorkloadSpec spec;
  spec.instance_id = "i-bench-share";
  spec.run = 1;
  const std::string script = fmt::format(
      "for d in /workspace /tmp; do echo MARK-$d-start; dd if=/dev/zero of=$d/f bs=1M count={0} "
      "2>/dev/null; sync; echo MARK-$d-written; echo 3 > /proc/sys/vm/drop_caches; "
      "dd if=$d/f of=/dev/null bs=1M 2>/dev/null; echo MARK-$d-read; rm -f $d/f; done",
      mib);
  spec.command = {"sh", "-c", script};
  GPURENT_CHECK(runtime.start(spec));
  const gpurent::agent::WorkloadKey key{spec.instance_id, 1};
  const fs::path log = runtime.find(key)->log_path;
  const std::vector<std::string> marks = {"MARK-/workspace-start", "MARK-/workspace-written",
                                          "MARK-/workspace-read",  "MARK-/tmp-start",
                                          "MARK-/tmp-written",     "MARK-/tmp-read"};
  std::vector<Clock::time_point> seen;
  while (seen.size() < marks.size()) {
    const std::string text = gpurent::read_file(log).value_or("");
    while (seen.size() < marks.size() && text.find(marks[seen.size()]) != std::string::npos) {
      seen.push_back(Clock::now());
    }
    runtime.poll();
    if (runtime.find(key)->phase == gpurent::model::WorkloadPhase::kExited &&
        seen.size() < marks.size()) {
      return gpurent::fail(
          gpurent::Error::internal("the guest ended before its last mark: " + text));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const auto rate = [&](size_t from) {
    return mib / std::chrono::duration<double>(seen[from + 1] - seen[from]).count();
  };
  while (runtime.find(key)->phase != gpurent::model::WorkloadPhase::kExited) {
    runtime.poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  GPURENT_CHECK(runtime.forget(key));
  return std::vector<std::pair<std::string, double>>{
      {"write to the shared /workspace, synced", rate(0)},
      {"read it back (the guest's cache dropped)", rate(1)},
      {"write to the guest's own /tmp", rate(3)},
      {"read it back", rate(4)}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr,
               "usage: {} IMAGE [--launches N] [--execs N] [--kvm] [--isolated] [--shares "
               "9p|virtiofs] [--share-mb N] [--unconfined]\n",
               argv[0]);
    return 2;
  }
  const fs::path image = argv[1];
  int launches = 20;
  int execs = 20;
  bool kvm = false;
  bool isolated = false;
  auto shares = gpurent::agent::VmShares::k9p;
  int share_mb = 0;
  bool unconfined = false;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--launches" && i + 1 < argc) launches = std::stoi(argv[++i]);
    if (arg == "--execs" && i + 1 < argc) execs = std::stoi(argv[++i]);
    if (arg == "--kvm") kvm = true;
    if (arg == "--isolated") isolated = true;
    if (arg == "--shares" && i + 1 < argc) {
      shares = std::string_view(argv[++i]) == "virtiofs" ? gpurent::agent::VmShares::kVirtioFs
                                                         : gpurent::agent::VmShares::k9p;
    }
    if (arg == "--share-mb" && i + 1 < argc) share_mb = std::stoi(argv[++i]);
    if (arg == "--unconfined") unconfined = true;
  }
  const bool cloud = fs::is_regular_file(image);
  const int memory_mb = cloud ? 768 : 256;  // cloud-init's Python wants more than /init
  const fs::path dir = fs::path("/tmp") / "gpurent-vm-bench";
  fs::remove_all(dir);
  fs::create_directories(dir / "data");
  // The workload users, as a root agent with a sandbox keeps them: QEMU runs confined, as the
  // instance's user, and the guests' files over virtio-fs get their tenant's ids.
  const bool confined = ::geteuid() == 0 && !unconfined;
  std::shared_ptr<gpurent::agent::WorkloadUsers> users;
  if (confined) {
    auto opened =
        gpurent::agent::WorkloadUsers::open(dir / "data", gpurent::agent::kDefaultWorkloadIds);
    if (!opened) {
      fmt::print(stderr, "{}\n", opened.error().message);
      return 1;
    }
    users = std::make_shared<gpurent::agent::WorkloadUsers>(std::move(*opened));
  }
  auto runtime = VmRuntime::open({.data_dir = dir / "data",
                                  .instances_dir = dir / "instances",
                                  .kernel = cloud ? fs::path() : image / "vmlinuz",
                                  .initrd = cloud ? fs::path() : image / "initrd.gz",
                                  .cloud_image = cloud ? image : fs::path(),
                                  .accelerator = kvm ? gpurent::agent::VmAccelerator::kKvm
                                                     : gpurent::agent::VmAccelerator::kTcg,
                                  .network = isolated ? gpurent::agent::VmNetwork::kIsolated
                                                      : gpurent::agent::VmNetwork::kOutbound,
                                  .default_memory_mb = memory_mb,
                                  .shares = shares,
                                  .users = std::move(users)});
  if (!runtime) {
    fmt::print(stderr, "{}\n", runtime.error().message);
    return 1;
  }
  std::vector<double> started, booted, ended;
  for (int i = 0; i < launches; ++i) {
    gpurent::model::WorkloadSpec spec;
    spec.instance_id = fmt::format("i-bench{}", i);
    spec.run = 1;
    spec.command = cloud ? std::vector<std::string>{"sh", "-c", "echo GPURENT_BOOTED"}
                         : std::vector<std::string>{"true"};
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
  std::vector<double> exec_times;
  if (execs > 0) {
    gpurent::model::WorkloadSpec spec;
    spec.instance_id = "i-bench-exec";
    spec.run = 1;
    spec.command = {"sleep", "600"};
    if (auto ok = (*runtime)->start(spec); !ok) {
      fmt::print(stderr, "start: {}\n", ok.error().message);
      return 1;
    }
    const gpurent::agent::WorkloadKey key{spec.instance_id, 1};
    const auto socket = gpurent::agent::vm_guest_agent_socket(dir / "data", key);
    const auto argv_true = gpurent::agent::vm_exec_argv({"true"});
    // Execs wait for the guest to boot, qemu-ga to answer and the run's files to be mounted (a
    // cloud image's qemu-ga answers before its per-boot script mounts them); not counted.
    const auto boot_deadline = Clock::now() + std::chrono::seconds(cloud ? 600 : 120);
    for (;;) {
      const auto ran = gpurent::agent::guest_exec(socket, argv_true, {}, std::chrono::seconds(30));
      if (ran && ran->exit_code == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (Clock::now() > boot_deadline) {
        fmt::print(stderr, "the guest agent never answered\n");
        return 1;
      }
    }
    for (int i = 0; i < execs; ++i) {
      const auto t0 = Clock::now();
      const auto ran = gpurent::agent::guest_exec(socket, argv_true, {}, std::chrono::seconds(30));
      if (!ran || ran->exit_code != 0) {
        fmt::print(stderr, "exec: {}\n", ran ? "exit status not 0" : ran.error().message);
        return 1;
      }
      exec_times.push_back(ms_since(t0));
    }
    (*runtime)->stop(key);
    while ((*runtime)->find(key)->phase != gpurent::model::WorkloadPhase::kExited) {
      (*runtime)->poll();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  std::vector<std::pair<std::string, double>> throughput;  // MiB/s
  if (share_mb > 0) {
    auto measured = share_throughput(**runtime, share_mb);
    if (!measured) {
      fmt::print(stderr, "share: {}\n", measured.error().message);
      return 1;
    }
    throughput = std::move(*measured);
  }
  fs::remove_all(dir);
  fmt::print(
      "| VM ({}, {}, {} network, {} folders, QEMU {}, {} launches, {} MiB, 1 vCPU) | p50 | "
      "p99 | max |\n",
      cloud ? "cloud image" : "kernel+initrd", kvm ? "KVM" : "TCG", isolated ? "isolated" : "passt",
      gpurent::agent::guest_fs_type(shares), confined ? "confined" : "as the agent", launches,
      memory_mb);
  fmt::print("| --- | --- | --- | --- |\n");
  if (launches > 0) {
    fmt::print("| start() returns (QEMU's monitor answers: reported running) | {} |\n",
               summary(started));
    fmt::print("| the command runs in the guest (GPURENT_BOOTED) | {} |\n", summary(booted));
    fmt::print("| the run's exit seen (the command ended, guest powered off) | {} |\n",
               summary(ended));
  }
  if (!exec_times.empty()) {
    fmt::print("| `gpurent exec true` through the guest agent ({} execs) | {} |\n", execs,
               summary(exec_times));
  }
  for (const auto& [what, mib_per_s] : throughput) {
    fmt::print("| {} ({} MiB) | {:.0f} MiB/s | | |\n", what, share_mb, mib_per_s);
  }
  return 0;
}
