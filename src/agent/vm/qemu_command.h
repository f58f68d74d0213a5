// The QEMU command line of a VM run (the VM runtime, issue 31; docs/vm-runtime.md): a q35
// machine with no default devices, its serial console to the run's log, QMP on a unix socket for
// the agent, disks and shared folders as virtio devices, a network card (QEMU's user-mode
// networking with the services' ports forwarded from the host's loopback, or passt), and the GPUs'
// functions through vfio-pci.
//
// Values that QEMU reads as comma-separated options have their commas doubled, so a path or a
// name cannot add an option. The kernel's command line is one argument (no shell runs this).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace gpurent::agent {

enum class VmAccelerator {
  kKvm,  // /dev/kvm: the host's CPU, near native speed
  kTcg,  // QEMU's translator: slow, but works where KVM does not (nested VMs)
};

// "kvm" or "tcg", as QEMU's -accel names them.
inline std::string_view to_string(VmAccelerator accelerator) {
  return accelerator == VmAccelerator::kKvm ? "kvm" : "tcg";
}

// What a node's guests reach (the agent's --vm-network; docs/vm-runtime.md, "Network").
enum class VmNetwork {
  kOutbound,  // through passt (passt.h): what the node reaches, but not the node's loopback
  kIsolated,  // QEMU's user-mode networking, restricted: nothing; only the forwards reach in
};

// How the shared folders (the run's files, /workspace, the volumes) reach the guest (the agent's
// --vm-shares; docs/vm-runtime.md, "Shared folders").
enum class VmShares {
  // virtio-9p, served by QEMU itself, security_model=mapped-xattr: the host's files are QEMU's
  // (0660 and 0770: its group's too), and the owners, modes, links and device files the guest
  // makes are kept in xattrs, never made.
  // Needs virtio-9p in the guest kernel (not in Debian's `cloud` kernel).
  k9p,
  // virtio-fs, served by one virtiofsd per folder (virtiofsd.h), in every kernel since 5.4
  // (Debian's `cloud` kernel among them); the guest's owners and modes are the host files' own,
  // as the node's guest ids.
  kVirtioFs,
};

// "9p" or "virtiofs": the guest's mount -t type, and the agent's --vm-shares value.
inline std::string_view guest_fs_type(VmShares shares) {
  return shares == VmShares::k9p ? "9p" : "virtiofs";
}

struct VmPortForward {
  int host_port = 0;  // on 127.0.0.1
  int guest_port = 0;
};

struct VmMachine {
  std::string name;  // "<instance>.<run>"
  VmAccelerator accelerator = VmAccelerator::kKvm;
  int vcpus = 1;
  int memory_mb = 512;
  // Boot from a kernel and an initrd (small images) with these kernel arguments...
  std::filesystem::path kernel;
  std::filesystem::path initrd;
  std::string kernel_args;
  // ...and/or a root disk: a qcow2 overlay on the image, the instance's copy-on-write root.
  std::filesystem::path root_disk;
  // cloud-init's NoCloud seed: a directory (meta-data, user-data) the guest sees as a read-only
  // FAT disk labelled "cidata" (QEMU's vvfat: no image to make); empty: none.
  std::filesystem::path seed;
  struct Share {
    std::string tag;  // the guest mounts it by this tag
    std::filesystem::path directory;
    std::filesystem::path socket;  // virtio-fs: where its virtiofsd listens
  };
  // virtio-fs needs the guest's memory shared with the virtiofsds (a memfd backend).
  VmShares share_transport = VmShares::k9p;
  std::vector<Share> shares;
  std::vector<std::string> vfio_functions;  // PCI addresses bound to vfio-pci (vfio.h)
  // The network card (false: none). Its other end is QEMU's user-mode networking, restricted
  // (the guest reaches neither the host nor the outside; only the forwards reach in), or, when
  // passt_socket is set, the passt listening there (passt.h), which forwards the ports itself.
  bool network = true;
  std::vector<VmPortForward> forwards;
  std::filesystem::path passt_socket;
  std::filesystem::path serial_log;  // the console's output: the run's log
  std::filesystem::path qmp_socket;
  // The host side of the guest agent's virtio-serial port (org.qemu.guest_agent.0, where qemu-ga
  // listens in the guest: guest_agent.h); empty: none.
  std::filesystem::path guest_agent_socket;
  std::filesystem::path pid_file;
};

// argv of qemu-system-x86_64 for the machine.
std::vector<std::string> qemu_command(const VmMachine& machine);

// An option value with its commas doubled (QEMU's escape).
std::string qemu_escape(const std::string& value);

}  // namespace gpurent::agent
