// The VM runtime (issue 31, docs/vm-runtime.md): each workload (one run of one instance) is a QEMU
// virtual machine, its console the run's log. A node boots every VM from one guest image, either
//   - a kernel and an initrd, whose /init runs the command (scripts/vm-test-image.sh makes one):
//     each run boots afresh, the instance's files live in /workspace; or
//   - a cloud image (qcow2, booting by itself, with cloud-init and qemu-ga:
//     scripts/vm-cloud-image.sh makes one): each instance gets its own copy-on-write overlay on
//     it, its root disk, kept across its runs, of the spec's disk_gb (cloud-init grows the guest's
//     root filesystem into it) or else the image's size; a cloud-init NoCloud seed creates the
//     user "gpurent" with the spec's SSH keys, and a per-boot script that runs the command.
//
// A run's directory <data_dir>/vms/<instance>.<run>/ holds:
//   guest/env.sh      the platform's env, exported (the command and every exec source it)
//   guest/command.sh  what the guest runs (env.sh, the volumes mounted, cd /workspace, exec the
//                     command); guest/ is shared in as the tag "gpurent" at /run/gpurent
//   seed/             a cloud image's cloud-init seed (meta-data, user-data): the guest's "cidata"
//   ssh_port          a cloud image's: the loopback port forwarded to the guest's sshd (port 22)
//   qemu/             what QEMU makes, QEMU's user's (see "Confinement"):
//     console.log     the serial console: the run's log, and the guest's "GPURENT_EXIT <code>"
//     qmp.sock        QEMU's monitor
//     qga.sock        the guest agent's port (exec: guest_agent.h)
//     qemu.pid        QEMU's pid, as QEMU says it
//   qemu.log          QEMU's own output (why it did not start)
//   state.json        QEMU's pid and its /proc start time, as the runtime started it
//   exit.json         written here once QEMU is gone: the code the guest printed; 128 + 15
//                     when it was stopped first and printed none, 137 otherwise
//   net.sock, passt.log  passt's socket and messages (outbound networking)
//   fs<i>.sock, virtiofsd.log  the sockets of the virtiofsds serving the shared folders, in
//                     their order below, and their messages (options.shares virtio-fs)
//   passthrough       the addresses of the GPUs handed to vfio-pci for the run, one a line
//   gpus              the UUIDs of the run's GPUs, one a line: those whose telemetry the guest
//                     reports in guest/gpus.csv (guest_gpu_report.h)
// The instance's directory is shared in read-write as "workspace" at /workspace, kept across runs
// (a workdir upload is unpacked into it before the first run); each volume's data (volumes.h) as
// "vol<i>", which command.sh mounts at its path first. A cloud image's overlay is
// <data_dir>/vm-disks/<instance>.qcow2. The folders go over virtio-9p (QEMU's) or virtio-fs (a
// virtiofsd each, in a user namespace whose ids are the run's tenant's guest ids, from
// options.users: virtiofsd.h, workload_users.h), as options.shares says; over virtio-fs each
// folder is given to the guest's root first.
//
// Network (options.network): passt (passt.h) beside QEMU, its socket the run's net.sock and its
// messages passt.log, or QEMU's restricted user-mode networking. Either way each port the run's
// env gives a service (GPURENT_PORT_*, node_runs.h) is forwarded from the host's loopback to the
// same port in the guest, so the node API's proxy reaches a guest that listens on it.
//
// GPUs: a spec's GPUs (by UUID, found among the node's GPUs by PCI address) have their IOMMU
// groups bound to vfio-pci (vfio.h) and passed to QEMU. Their addresses are recorded before the
// first bind, so that whoever sees the VM end (this runtime or a later one) gives them back to the
// host's driver, before writing the exit record. Simulated GPUs are not bound: the guest gets
// their UUIDs in CUDA_VISIBLE_DEVICES, as a process would.
//
// Confinement. QEMU runs with its seccomp filter (qemu_command.h: no fork, exec or change of ids),
// started detached (spawn_detached, tool_run.h): it never daemonizes, and start() returns once its
// monitor answers. With options.users (a root agent with a sandbox) it also runs as the instance's
// user in its tenant's group (and /dev/kvm's), with no capabilities and no_new_privs, in a mount
// namespace where the agent's data directory (or the first directory above it that others may not
// pass), and any directory others may not pass above the guest image, is an empty tmpfs but for
// what QEMU opens: qemu/, the root disk and seed, the helpers' sockets, the image, and over 9p the
// shared folders, each given to that user first (the image must be readable by others: open()
// refuses one that is not). The GPUs' /dev/vfio nodes are the user's for the run, and it may lock
// the guest's memory and 1 GiB more (VFIO pins it). A QEMU taken over from its guest is then one
// unprivileged user of the node that sees neither the node's credential nor the run's own
// records.
//
// QEMU outlives the agent: a runtime opened on a data directory adopts the runs it finds by their
// state (a pid whose start time still matches) and exit records. Stopping a cloud image's VM
// presses its power button (QMP system_powerdown: the guest shuts down and its root disk is left
// clean); a kernel+initrd VM, whose disk is the instance's directory written through its share,
// gets SIGTERM (QEMU ends the machine at once). Either gets SIGKILL after the grace period.
//
// Exec: vm_exec_argv runs a command through the guest agent (guest_agent.h) as the run's command
// runs: its env, in /workspace. The image must run qemu-ga on the port.
//
// Thread-safety: none; the reconcile thread owns it.
#pragma once

#include <sys/types.h>

#include <ctime>

#include <cstdint>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/runtime/runtime.h"
#include "agent/runtime/workload_users.h"
#include "agent/tool_run.h"
#include "agent/vm/qemu_command.h"
#include "agent/vm/virtiofsd.h"
#include "common/result.h"
#include "model/node.h"

namespace gpurent::agent {

// The PATH of what runs in a guest for the platform (a run's command when its env sets none, a
// copy's tar): qemu-ga passes no environment of its own.
inline constexpr std::string_view kGuestPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// A run's directory under a data directory, and its guest agent's socket there.
std::filesystem::path vm_run_dir(const std::filesystem::path& data_dir, const WorkloadKey& key);
std::filesystem::path vm_guest_agent_socket(const std::filesystem::path& data_dir,
                                            const WorkloadKey& key);
// The loopback port forwarded to the guest's SSH server (port 22) of a run booted from a cloud
// image; nullopt for other runs.
std::optional<uint16_t> vm_ssh_port(const std::filesystem::path& data_dir, const WorkloadKey& key);
// The argv that runs `command` in the guest with the run's env, in /workspace (/bin/sh sources the
// run's env.sh, then execs the command: a program the guest lacks exits 127).
std::vector<std::string> vm_exec_argv(const std::vector<std::string>& command);

struct VmRuntimeOptions {
  std::filesystem::path data_dir;       // runs under <data_dir>/vms/
  std::filesystem::path instances_dir;  // <instances_dir>/<instance>/ is shared in as /workspace
  // The image every VM boots: a kernel and an initrd, or (when kernel is empty) a cloud image.
  std::filesystem::path kernel;
  std::filesystem::path initrd;
  std::filesystem::path cloud_image;
  VmAccelerator accelerator = VmAccelerator::kKvm;
  VmNetwork network = VmNetwork::kOutbound;
  int default_memory_mb = 1024;  // when the spec asks for none
  bool simulated_gpus = false;   // the node's GPUs are simulated: a spec's GPUs are not passed
  std::vector<model::Gpu> gpus;  // the node's, with their PCI addresses (real GPUs)
  std::filesystem::path sysfs = "/sys";
  std::string qemu = "qemu-system-x86_64";
  std::string qemu_img = "qemu-img";
  std::string passt = "passt";
  VmShares shares = VmShares::k9p;  // how the shared folders reach the guest
  std::string virtiofsd = kVirtiofsdPath;
  // The node's workload users (workload_users.h; a root agent's, with a sandbox). With them QEMU
  // runs confined (see above), and each tenant's guests get their ids over virtio-fs, which needs
  // them.
  std::shared_ptr<WorkloadUsers> users;
  std::filesystem::path dev = "/dev";  // where /dev/kvm and /dev/vfio/<group> are
  std::chrono::milliseconds stop_grace{10'000};
  // For QEMU to make the machine and answer on its monitor, not for the guest to boot.
  std::chrono::milliseconds boot_timeout{60'000};
};

class VmRuntime final : public Runtime {
 public:
  // Creates the directories and adopts every run recorded under data_dir.
  static Result<std::unique_ptr<VmRuntime>> open(VmRuntimeOptions options);
  VmRuntime(const VmRuntime&) = delete;
  VmRuntime& operator=(const VmRuntime&) = delete;
  ~VmRuntime() override = default;

  // Starts the run's VM; returns once QEMU's monitor answers (the guest boots on). Errors: as every
  // runtime's (runtime.h); kUnprocessable "gpu_passthrough_unavailable" for a GPU that is not the
  // node's or has no PCI address, and vfio.h's refusals for one that cannot be passed through;
  // kInternal "vm_start_failed" with QEMU's own words. GPUs bound before a failure are given back.
  Status start(const model::WorkloadSpec& spec) override;
  void stop(const WorkloadKey& key) override;
  Status forget(const WorkloadKey& key) override;
  void poll() override;
  std::vector<Workload> workloads() const override;
  const Workload* find(const WorkloadKey& key) const override;
  std::optional<SteadyTime> next_deadline() const override;
  std::filesystem::path instance_dir(std::string_view instance_id) const override;
  // The instance's directory and its root disk.
  Status remove_instance(std::string_view instance_id) override;
  // What the running guests wrote of their own GPUs (guest_gpu_report.h) since the last call.
  void guest_gpu_samples(int64_t time_ms, std::vector<model::GpuSample>& out) override;

 private:
  struct Entry {
    Workload info;
    std::filesystem::path dir;
    pid_t pid = 0;  // QEMU's; 0 once it is gone
    uint64_t start_time = 0;
    std::optional<SteadyTime> kill_at;  // SIGKILL deadline of a requested stop
    std::vector<std::string> gpus;      // the run's GPUs (UUIDs): those its guest may report
    timespec reported{};                // the modification time of the last report read
  };
  explicit VmRuntime(VmRuntimeOptions options) : options_(std::move(options)) {}
  void adopt(const std::filesystem::path& dir);
  bool alive(Entry& entry);
  // QEMU is gone: the GPUs given back, then the exit record from what the guest printed (or how
  // it was stopped).
  void finish(Entry& entry);
  // Binds the GPUs' IOMMU groups to vfio-pci, recording them in dir first, and gives their
  // /dev/vfio nodes to QEMU's user: the functions QEMU is to be given.
  Result<std::vector<std::string>> pass_through(const std::vector<std::string>& uuids,
                                                const std::filesystem::path& dir,
                                                const std::optional<RunAs>& qemu_user);
  // QEMU's user for the run: the instance's, in its tenant's group (and /dev/kvm's), when the
  // runtime has the node's workload users; else none (QEMU runs as the agent).
  Result<std::optional<RunAs>> qemu_user_of(const model::WorkloadSpec& spec) const;
  // Gives QEMU's user what it opens itself: the root disk, the seed, and over 9p the shared
  // folders.
  Status give_to_qemu(const VmMachine& machine, const RunAs& user) const;
  struct Launched {
    pid_t pid = 0;
    uint64_t start_time = 0;
  };
  // Starts QEMU detached (as its user, covered: see above) and waits until its monitor answers;
  // QEMU's own words when it ends first.
  Result<Launched> launch_qemu(const VmMachine& machine, const std::filesystem::path& dir,
                               const std::optional<RunAs>& user) const;
  // The instance's root disk on the cloud image, made on its first run, and grown to disk_gb
  // (when larger than it is).
  Result<std::filesystem::path> root_disk(std::string_view instance_id, int disk_gb);
  // Gives the GPUs recorded in dir back to the host's driver and drops the record.
  void give_back(const std::filesystem::path& dir);
  std::filesystem::path run_dir(const WorkloadKey& key) const;

  VmRuntimeOptions options_;
  std::map<WorkloadKey, Entry> entries_;
};

}  // namespace gpurent::agent
