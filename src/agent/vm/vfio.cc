#include "agent/vm/vfio.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <system_error>

#include "agent/gpu/topology.h"
#include "common/files.h"

namespace gpurent::agent {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kVfioDriver = "vfio-pci";
constexpr std::string_view kBridgeClassPrefix = "0x0604";

// A sysfs attribute's value, without its trailing newline; "" when it is absent.
std::string attribute(const fs::path& path) {
  auto text = read_file(path, 4096);
  if (!text) return "";
  while (!text->empty() && std::isspace(static_cast<unsigned char>(text->back()))) {
    text->pop_back();
  }
  return *text;
}

// Sysfs attributes are written in place, one write each (the kernel acts on the write).
Status write_attribute(const fs::path& path, std::string_view value) {
  std::ofstream out(path);
  out << value;
  out.flush();
  if (!out) {
    return fail({ErrorKind::kInternal, "sysfs_write_failed",
                 fmt::format("could not write '{}' to {}", value, path.string())});
  }
  return {};
}

fs::path device_dir(const fs::path& sysfs, std::string_view address) {
  return sysfs / "bus" / "pci" / "devices" / address;
}

PciFunction read_function(const fs::path& sysfs, const std::string& address) {
  const fs::path dir = device_dir(sysfs, address);
  PciFunction f{.address = address,
                .vendor = attribute(dir / "vendor"),
                .device = attribute(dir / "device"),
                .pci_class = attribute(dir / "class")};
  std::error_code ec;
  const fs::path driver = fs::read_symlink(dir / "driver", ec);
  if (!ec) f.driver = driver.filename().string();
  f.bridge = f.pci_class.starts_with(kBridgeClassPrefix);
  return f;
}

// "0000:3b:00.0" -> "0000:3b:00": the functions of one device share it.
std::string_view slot_of(std::string_view address) {
  const size_t dot = address.rfind('.');
  return dot == std::string_view::npos ? address : address.substr(0, dot);
}

bool iommu_enabled(const fs::path& sysfs) {
  std::error_code ec;
  const fs::path groups = sysfs / "kernel" / "iommu_groups";
  return fs::is_directory(groups, ec) && !fs::is_empty(groups, ec);
}

}  // namespace

std::vector<std::string> PassthroughPlan::to_bind() const {
  std::vector<std::string> out;
  for (const auto& f : functions) {
    if (!f.bridge) out.push_back(f.address);
  }
  return out;
}

Result<PassthroughPlan> plan_passthrough(const fs::path& sysfs, std::string_view gpu) {
  // The address becomes a path: only the sysfs form of one.
  if (gpu.empty() || sysfs_pci_address(gpu) != gpu) {
    return fail(Error::invalid("invalid_pci_address",
                               fmt::format("'{}' is not a PCI address as sysfs names it", gpu)));
  }
  if (!iommu_enabled(sysfs)) {
    return fail({ErrorKind::kUnprocessable, "iommu_disabled",
                 "the host has no IOMMU groups: enable the IOMMU (intel_iommu=on or amd_iommu=on "
                 "and VT-d/AMD-Vi in the firmware) to pass GPUs through"});
  }
  const fs::path dir = device_dir(sysfs, gpu);
  std::error_code ec;
  const fs::path group_link = fs::read_symlink(dir / "iommu_group", ec);
  if (!fs::exists(dir, ec) || group_link.empty()) {
    return fail(Error::not_found("pci_device", gpu));
  }
  PassthroughPlan plan{.gpu = std::string(gpu)};
  const std::string group_name = group_link.filename().string();
  plan.iommu_group = std::atoi(group_name.c_str());
  std::vector<std::string> members;
  for (const auto& entry :
       fs::directory_iterator(sysfs / "kernel" / "iommu_groups" / group_name / "devices", ec)) {
    members.push_back(entry.path().filename().string());
  }
  std::ranges::sort(members);
  plan.functions.push_back(read_function(sysfs, std::string(gpu)));
  for (const auto& address : members) {
    if (address == gpu) continue;
    PciFunction f = read_function(sysfs, address);
    if (!f.bridge && slot_of(address) != slot_of(gpu)) {
      return fail({ErrorKind::kUnprocessable, "iommu_group_shared",
                   fmt::format("IOMMU group {} of GPU {} also holds {} (class {}, driver {}): a "
                               "VM gets whole groups only; move the card to a slot of its own or "
                               "enable ACS",
                               plan.iommu_group, gpu, address, f.pci_class,
                               f.driver.empty() ? "none" : f.driver)});
    }
    plan.functions.push_back(std::move(f));
  }
  return plan;
}

bool bound_to_vfio(const fs::path& sysfs, std::string_view address) {
  return !address.empty() && sysfs_pci_address(address) == address &&
         read_function(sysfs, std::string(address)).driver == kVfioDriver;
}

Status bind_to_vfio(const fs::path& sysfs, const PassthroughPlan& plan) {
  for (const auto& address : plan.to_bind()) {
    const fs::path dir = device_dir(sysfs, address);
    const PciFunction now = read_function(sysfs, address);
    if (now.driver == kVfioDriver) continue;
    GPURENT_CHECK(write_attribute(dir / "driver_override", kVfioDriver));
    if (!now.driver.empty()) GPURENT_CHECK(write_attribute(dir / "driver" / "unbind", address));
    GPURENT_CHECK(write_attribute(sysfs / "bus" / "pci" / "drivers_probe", address));
  }
  return {};
}

Status give_back_to_host(const fs::path& sysfs, const PassthroughPlan& plan) {
  for (const auto& address : plan.to_bind()) {
    const fs::path dir = device_dir(sysfs, address);
    // An empty line clears the override (a bare write of "" is refused by some kernels).
    GPURENT_CHECK(write_attribute(dir / "driver_override", "\n"));
    if (read_function(sysfs, address).driver == kVfioDriver) {
      GPURENT_CHECK(write_attribute(dir / "driver" / "unbind", address));
    }
    GPURENT_CHECK(write_attribute(sysfs / "bus" / "pci" / "drivers_probe", address));
  }
  return {};
}

}  // namespace gpurent::agent
