// GPU passthrough for the VM runtime (issue 31, docs/vm-runtime.md): what the host's sysfs says
// about a GPU's PCI device and its IOMMU group, and the writes that hand the group to vfio-pci
// and give it back to the host's driver afterwards.
//
// A VM may only be given a whole IOMMU group: the IOMMU isolates groups, not devices, so a device
// left to the host in the GPU's group could be reached by the guest's DMA. plan_passthrough()
// therefore refuses a group that holds anything but the GPU's own functions (the same bus and
// slot: its audio, USB-C and serial-bus functions) and PCI bridges, which pass through with it and
// are not bound. Without an IOMMU (no groups under kernel/iommu_groups: intel_iommu/amd_iommu off
// in the kernel's command line or the firmware) nothing can be passed through.
//
// Binding follows the kernel's documented sequence for each device: driver_override =
// "vfio-pci", unbind from its driver, drivers_probe; giving back clears driver_override, unbinds
// from vfio-pci and probes again (the host's driver, nvidia, takes it back).
//
// Every path is under a sysfs root ("/sys" on a host) so the logic is tested on a fake tree. Not
// thread-safe; the agent's reconcile thread calls it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpurent::agent {

struct PciFunction {
  std::string address;    // "0000:3b:00.0", as sysfs names it
  std::string vendor;     // "0x10de"
  std::string device;     // "0x2330"
  std::string pci_class;  // "0x030200" (3D controller)
  std::string driver;     // the driver bound now ("nvidia", "vfio-pci"); "" when none
  bool bridge = false;    // a PCI bridge (class 0x0604): passed through with the group, not bound
};

struct PassthroughPlan {
  int iommu_group = -1;
  std::string gpu;  // the GPU's address
  // Every function of the group, the GPU first, then in address order.
  std::vector<PciFunction> functions;
  // The functions that are bound to vfio-pci (all but bridges).
  std::vector<std::string> to_bind() const;
};

// What passing `gpu` (a sysfs address: gpu/topology.h's sysfs_pci_address of NVML's bus id)
// through needs. Refusals, with what to do about them (kInvalidArgument "invalid_pci_address" for
// anything but a sysfs address):
// kUnprocessable "iommu_disabled", "iommu_group_shared" (naming the other device);
// kNotFound "pci_device_not_found".
Result<PassthroughPlan> plan_passthrough(const std::filesystem::path& sysfs, std::string_view gpu);

// Whether the PCI function (a sysfs address; anything else is not) is bound to vfio-pci now: a
// GPU given to a VM, which the host's driver, and so NVML, do not see.
bool bound_to_vfio(const std::filesystem::path& sysfs, std::string_view address);

// Hands the plan's functions to vfio-pci. A function already on vfio-pci is left as it is.
// Afterwards /dev/vfio/<group> is what QEMU opens.
Status bind_to_vfio(const std::filesystem::path& sysfs, const PassthroughPlan& plan);
// Gives the plan's functions back to the host's drivers (after the VM has stopped).
Status give_back_to_host(const std::filesystem::path& sysfs, const PassthroughPlan& plan);

}  // namespace gpurent::agent
