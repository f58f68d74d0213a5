// For tests: a sysfs with PCI devices in IOMMU groups, as the kernel lays it out:
// bus/pci/devices/<address> with vendor, device, class, driver_override, an iommu_group link and a
// driver link; kernel/iommu_groups/<n>/devices/<address> links back; bus/pci/drivers/<name>/unbind
// and bus/pci/drivers_probe. Writes land in plain files (a test reads what was written); nothing
// rebinds on its own, bind() plays the kernel's part.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "common/files.h"
#include "common/random.h"

namespace gpurent::agent {

class FakeSysfsTree {
 public:
  FakeSysfsTree()
      : root_(std::filesystem::temp_directory_path() /
              ("gpurent-sysfs-" + std::to_string(os_random_seed()))) {
    std::filesystem::create_directories(root_ / "bus" / "pci" / "devices");
    std::filesystem::create_directories(root_ / "kernel" / "iommu_groups");
    write(root_ / "bus" / "pci" / "drivers_probe", "");
  }
  ~FakeSysfsTree() { std::filesystem::remove_all(root_); }
  FakeSysfsTree(const FakeSysfsTree&) = delete;
  FakeSysfsTree& operator=(const FakeSysfsTree&) = delete;

  const std::filesystem::path& root() const { return root_; }

  static void write(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path) << text;
  }
  static std::string read(const std::filesystem::path& path) {
    return read_file(path).value_or("");
  }

  // A PCI function in an IOMMU group, bound to driver ("": none).
  void add(const std::string& address, int group, const std::string& pci_class,
           const std::string& driver) {
    namespace fs = std::filesystem;
    const fs::path dir = root_ / "bus" / "pci" / "devices" / address;
    fs::create_directories(dir);
    write(dir / "vendor", "0x10de\n");
    write(dir / "device", "0x2330\n");
    write(dir / "class", pci_class + "\n");
    const fs::path group_dir = root_ / "kernel" / "iommu_groups" / std::to_string(group);
    fs::create_directories(group_dir / "devices");
    fs::create_directory_symlink(group_dir, dir / "iommu_group");
    fs::create_directory_symlink(dir, group_dir / "devices" / address);
    write(dir / "driver_override", "(null)\n");
    if (!driver.empty()) bind(address, driver);
  }

  // What the kernel does on a probe: the device joins the driver.
  void bind(const std::string& address, const std::string& driver) {
    namespace fs = std::filesystem;
    const fs::path driver_dir = root_ / "bus" / "pci" / "drivers" / driver;
    fs::create_directories(driver_dir);
    write(driver_dir / "unbind", "");
    const fs::path link = root_ / "bus" / "pci" / "devices" / address / "driver";
    fs::remove(link);
    fs::create_directory_symlink(driver_dir, link);
  }

 protected:
  std::filesystem::path root_;
};

}  // namespace gpurent::agent
