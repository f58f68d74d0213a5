#include "agent/vm/vm_host.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/vm/vfio.h"

namespace gpurent::agent {
namespace {

// KVM's only stable API version, which every kernel since 2.6.22 reports.
constexpr int kKvmApiVersion = 12;

Error kvm_unavailable(const std::filesystem::path& device, std::string_view what) {
  return {ErrorKind::kUnavailable, "kvm_unavailable",
          fmt::format("{}: {} (VMs run under TCG, QEMU's emulation, without it)", device.string(),
                      what)};
}

}  // namespace

Status probe_kvm(const std::filesystem::path& device) {
  const int fd = ::open(device.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return fail(kvm_unavailable(device, std::strerror(errno)));
  const int version = ::ioctl(fd, KVM_GET_API_VERSION, 0);
  if (version != kKvmApiVersion) {
    ::close(fd);
    return fail(
        kvm_unavailable(device, fmt::format("API version {}, not {}", version, kKvmApiVersion)));
  }
  const int vm = ::ioctl(fd, KVM_CREATE_VM, 0);
  const int create_errno = errno;
  ::close(fd);
  if (vm < 0) {
    return fail(kvm_unavailable(
        device, fmt::format("cannot create a VM: {}", std::strerror(create_errno))));
  }
  ::close(vm);
  return {};
}

Result<VmHost> detect_vm_host(VmAcceleratorChoice choice, const std::vector<model::Gpu>& gpus,
                              bool simulated_gpus, const std::filesystem::path& kvm_device,
                              const std::filesystem::path& sysfs) {
  VmHost host;
  std::string note;
  if (choice == VmAcceleratorChoice::kTcg) {
    note = "the operator chose TCG (--vm-accelerator tcg)";
  } else if (auto kvm = probe_kvm(kvm_device); kvm) {
    host.accelerator = VmAccelerator::kKvm;
  } else if (choice == VmAcceleratorChoice::kKvm) {
    return fail(std::move(kvm).error());
  } else {
    note = kvm.error().message;
  }
  host.capability.accelerator = to_string(host.accelerator);
  host.capability.gpu_passthrough = true;
  if (!simulated_gpus) {
    if (host.accelerator != VmAccelerator::kKvm) {
      host.capability.gpu_passthrough = false;
      note = fmt::format("GPUs pass through only under KVM; {}", note);
    }
    for (const auto& gpu : gpus) {
      if (!host.capability.gpu_passthrough) break;
      if (auto plan = plan_passthrough(sysfs, gpu.pci_address); !plan) {
        host.capability.gpu_passthrough = false;
        note = fmt::format("GPU {} ({}): {}", gpu.index, gpu.pci_address, plan.error().message);
      }
    }
  }
  host.capability.note = std::move(note);
  return host;
}

}  // namespace gpurent::agent
