// What this host can do with VMs (the VM runtime, docs/vm-runtime.md): which accelerator QEMU
// uses, and whether the node's GPUs can be passed through. The agent works it out once at start
// and states it to the server (model::VmCapability); the scheduler puts VM work only on nodes that
// can give VMs their GPUs.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "agent/vm/qemu_command.h"
#include "common/result.h"
#include "model/node.h"

namespace gpurent::agent {

// The operator's --vm-accelerator.
enum class VmAcceleratorChoice {
  kAuto,  // KVM when /dev/kvm makes VMs, else TCG
  kKvm,   // KVM or fail to start
  kTcg,   // TCG even where KVM works (hosts where a nested KVM guest hangs)
};

// Whether the KVM device creates a VM: opens it, checks the API version (12, the only stable one)
// and creates (and closes) an empty VM. kUnavailable "kvm_unavailable" saying why not.
Status probe_kvm(const std::filesystem::path& device = "/dev/kvm");

struct VmHost {
  VmAccelerator accelerator = VmAccelerator::kTcg;
  model::VmCapability capability;
};

// The accelerator for the choice (kKvm without a working KVM: the probe's error), and whether
// the GPUs pass through: simulated GPUs always do (nothing is bound); real ones need KVM and each
// GPU's IOMMU group to itself (vfio.h, under sysfs). The note says why not, or that TCG was chosen.
Result<VmHost> detect_vm_host(VmAcceleratorChoice choice, const std::vector<model::Gpu>& gpus,
                              bool simulated_gpus, const std::filesystem::path& kvm_device,
                              const std::filesystem::path& sysfs);

}  // namespace gpurent::agent
