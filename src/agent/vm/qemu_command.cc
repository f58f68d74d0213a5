#include "agent/vm/qemu_command.h"

#include <fmt/format.h>

namespace gpurent::agent {

std::string qemu_escape(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    out += c;
    if (c == ',') out += ',';
  }
  return out;
}

std::vector<std::string> qemu_command(const VmMachine& m) {
  const bool kvm = m.accelerator == VmAccelerator::kKvm;
  const bool virtio_fs = m.share_transport == VmShares::kVirtioFs && !m.shares.empty();
  std::string machine = kvm ? "q35,accel=kvm" : "q35,accel=tcg";
  // vhost-user devices (virtiofsd) read and write the guest's memory themselves: it must be a
  // shared mapping they can map too.
  if (virtio_fs) machine += ",memory-backend=ram";
  std::vector<std::string> argv = {
      "qemu-system-x86_64",
      "-name",
      fmt::format("guest={},process=gpurent-vm-{}", qemu_escape(m.name), qemu_escape(m.name)),
      "-machine",
      machine,
      // The host's CPU model with KVM (what CUDA's guest driver expects); QEMU's fullest with TCG.
      "-cpu",
      kvm ? "host" : "max",
      "-smp",
      std::to_string(m.vcpus),
      "-m",
      fmt::format("{}M", m.memory_mb),
      "-nodefaults",
      "-no-user-config",
      // QEMU's seccomp filter, as libvirt sets it: besides the syscalls no VM needs, it may not
      // change its ids, fork or exec, or change priorities, CPU affinity or limits. So QEMU never
      // daemonizes (its fork would be refused): the runtime starts it detached.
      "-sandbox",
      "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
      "-display",
      "none",
      // A guest that reboots has ended its run: QEMU exits instead.
      "-no-reboot",
      "-chardev",
      fmt::format("file,id=console,path={}", qemu_escape(m.serial_log.string())),
      "-serial",
      "chardev:console",
      "-qmp",
      fmt::format("unix:{},server=on,wait=off", qemu_escape(m.qmp_socket.string())),
  };
  if (virtio_fs) {
    argv.insert(argv.end(), {"-object", fmt::format("memory-backend-memfd,id=ram,size={}M,share=on",
                                                    m.memory_mb)});
  }
  if (!m.kernel.empty()) {
    argv.insert(argv.end(), {"-kernel", m.kernel.string()});
    if (!m.initrd.empty()) argv.insert(argv.end(), {"-initrd", m.initrd.string()});
    argv.insert(argv.end(), {"-append", m.kernel_args});
  }
  const auto drive = [&](const std::filesystem::path& path, std::string_view format,
                         std::string_view extra) {
    argv.insert(argv.end(), {"-drive", fmt::format("file={},format={},if=virtio{}",
                                                   qemu_escape(path.string()), format, extra)});
  };
  if (!m.root_disk.empty()) drive(m.root_disk, "qcow2", "");
  if (!m.seed.empty()) {
    argv.insert(argv.end(), {"-drive", fmt::format("driver=vvfat,dir={},label=cidata,read-only=on,"
                                                   "if=virtio",
                                                   qemu_escape(m.seed.string()))});
  }
  for (size_t i = 0; i < m.shares.size(); ++i) {
    const auto& share = m.shares[i];
    if (virtio_fs) {
      argv.insert(
          argv.end(),
          {"-chardev",
           fmt::format("socket,id=share{},path={}", i, qemu_escape(share.socket.string())),
           "-device",
           fmt::format("vhost-user-fs-pci,chardev=share{},tag={}", i, qemu_escape(share.tag))});
    } else {
      // What it makes on the node is its group's too (a tenant's runs share its volumes through
      // the tenant's group: volumes.h). -fsdev, as -virtfs drops fmode and dmode (QEMU 7.2).
      argv.insert(
          argv.end(),
          {"-fsdev",
           fmt::format("local,id=share{},path={},security_model=mapped-xattr,fmode=0660,"
                       "dmode=0770",
                       i, qemu_escape(share.directory.string())),
           "-device",
           fmt::format("virtio-9p-pci,fsdev=share{},mount_tag={}", i, qemu_escape(share.tag))});
    }
  }
  if (m.network && !m.passt_socket.empty()) {
    argv.insert(argv.end(), {"-netdev",
                             fmt::format("stream,id=net0,server=off,addr.type=unix,addr.path={}",
                                         qemu_escape(m.passt_socket.string())),
                             "-device", "virtio-net-pci,netdev=net0"});
  } else if (m.network) {
    // restrict=on: the guest reaches nothing, the host least of all (user-mode networking would
    // otherwise map 10.0.2.2 to the host's loopback, where the node API and other tenants'
    // services listen); only the forwarded ports reach in.
    std::string nic = "user,model=virtio-net-pci,restrict=on";
    for (const auto& f : m.forwards) {
      nic += fmt::format(",hostfwd=tcp:127.0.0.1:{}-:{}", f.host_port, f.guest_port);
    }
    argv.insert(argv.end(), {"-nic", nic});
  } else {
    argv.insert(argv.end(), {"-nic", "none"});
  }
  if (!m.guest_agent_socket.empty()) {
    argv.insert(argv.end(),
                {"-chardev",
                 fmt::format("socket,id=qga,path={},server=on,wait=off",
                             qemu_escape(m.guest_agent_socket.string())),
                 "-device", "virtio-serial-pci,id=serial0", "-device",
                 "virtserialport,bus=serial0.0,chardev=qga,name=org.qemu.guest_agent.0"});
  }
  for (const auto& function : m.vfio_functions) {
    argv.insert(argv.end(), {"-device", fmt::format("vfio-pci,host={}", qemu_escape(function))});
  }
  if (!m.pid_file.empty()) argv.insert(argv.end(), {"-pidfile", m.pid_file.string()});
  return argv;
}

}  // namespace gpurent::agent
