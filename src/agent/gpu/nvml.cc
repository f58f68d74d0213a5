#include "agent/gpu/nvml.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstring>
#include <optional>
#include <string>

#include "agent/gpu/nvml_api.h"
#include "agent/gpu/topology.h"
#include "model/gpu_catalog.h"

namespace gpurent::agent {
namespace {

using nvml::bind;
using nvml::kMaxNvLinks;
using nvml::Library;
using nvml::NVML_ERROR_INVALID_ARGUMENT;
using nvml::NVML_FEATURE_ENABLED;
using nvml::NVML_SUCCESS;
using nvml::nvmlDevice_t;
using nvml::nvmlMemory_t;
using nvml::nvmlReturn_t;

// The discovery calls; their layouts and signatures follow NVML's public API reference.
// NVML_DEVICE_NAME_V2_BUFFER_SIZE and NVML_DEVICE_UUID_V2_BUFFER_SIZE.
constexpr unsigned kNameBufferSize = 96;
constexpr unsigned kUuidBufferSize = 96;
// More than any single host carries (an HGX chassis has 8; NVSwitch systems up to 16 per host).
constexpr unsigned kMaxDevices = 64;

struct nvmlPciInfo_t {
  char bus_id_legacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pci_device_id;
  unsigned pci_sub_system_id;
  char bus_id[32];  // "00000000:65:00.0"
};
constexpr int NVML_NVLINK_DEVICE_TYPE_IBMNPU = 1;  // a link to a POWER CPU, not to a GPU

struct NvmlApi {
  nvmlReturn_t (*init_v2)();
  nvmlReturn_t (*shutdown)();
  nvmlReturn_t (*device_get_count_v2)(unsigned* count);
  nvmlReturn_t (*device_get_handle_by_index_v2)(unsigned index, nvmlDevice_t* device);
  nvmlReturn_t (*device_get_name)(nvmlDevice_t device, char* name, unsigned length);
  nvmlReturn_t (*device_get_uuid)(nvmlDevice_t device, char* uuid, unsigned length);
  nvmlReturn_t (*device_get_memory_info)(nvmlDevice_t device, nvmlMemory_t* memory);
  const char* (*error_string)(nvmlReturn_t result);
  // Topology, optional: a driver without one of these reports that part as unknown (-1).
  nvmlReturn_t (*device_get_pci_info)(nvmlDevice_t device, nvmlPciInfo_t* pci);
  nvmlReturn_t (*device_get_topology_common_ancestor)(nvmlDevice_t a, nvmlDevice_t b, int* level);
  nvmlReturn_t (*device_get_nvlink_state)(nvmlDevice_t device, unsigned link, int* active);
  nvmlReturn_t (*device_get_nvlink_remote_pci_info)(nvmlDevice_t device, unsigned link,
                                                    nvmlPciInfo_t* pci);
  nvmlReturn_t (*device_get_nvlink_remote_device_type)(nvmlDevice_t device, unsigned link,
                                                       int* type);
  nvmlReturn_t (*device_get_numa_node_id)(nvmlDevice_t device, unsigned* node);
};

Error unavailable(std::string message) {
  return {ErrorKind::kUnavailable, "nvml_unavailable", std::move(message)};
}

// Also hands out the device's handle, for the topology queries.
Result<model::Gpu> describe_device(const NvmlApi& api, unsigned index, nvmlDevice_t& device) {
  const auto failed = [&](std::string_view call, nvmlReturn_t rc) {
    return Error{ErrorKind::kInternal, "nvml_error",
                 fmt::format("{} for GPU {} failed: {}", call, index, api.error_string(rc))};
  };
  if (auto rc = api.device_get_handle_by_index_v2(index, &device); rc != NVML_SUCCESS) {
    return fail(failed("nvmlDeviceGetHandleByIndex_v2", rc));
  }
  char name[kNameBufferSize] = {};
  if (auto rc = api.device_get_name(device, name, kNameBufferSize); rc != NVML_SUCCESS) {
    return fail(failed("nvmlDeviceGetName", rc));
  }
  char uuid[kUuidBufferSize] = {};
  if (auto rc = api.device_get_uuid(device, uuid, kUuidBufferSize); rc != NVML_SUCCESS) {
    return fail(failed("nvmlDeviceGetUUID", rc));
  }
  nvmlMemory_t memory{};
  if (auto rc = api.device_get_memory_info(device, &memory); rc != NVML_SUCCESS) {
    return fail(failed("nvmlDeviceGetMemoryInfo", rc));
  }
  model::Gpu gpu;
  gpu.uuid = uuid;
  gpu.index = static_cast<int>(index);
  gpu.name = name;
  gpu.memory_mb = static_cast<int64_t>(memory.total / (1024 * 1024));
  gpu.type = model::gpu_type_slug_for(gpu.name, gpu.memory_mb);
  return gpu;
}

std::string pci_bus_id(const NvmlApi& api, nvmlDevice_t device) {
  nvmlPciInfo_t pci{};
  if (!api.device_get_pci_info || api.device_get_pci_info(device, &pci) != NVML_SUCCESS) return "";
  return std::string(pci.bus_id, strnlen(pci.bus_id, sizeof pci.bus_id));
}

// The PCI bus ids at the far ends of the device's active NVLinks (see topology.h), or nullopt
// when the driver cannot tell.
std::optional<std::vector<std::string>> nvlink_far_ends(const NvmlApi& api, nvmlDevice_t device) {
  if (!api.device_get_nvlink_state || !api.device_get_nvlink_remote_pci_info) return std::nullopt;
  std::vector<std::string> ends;
  for (unsigned link = 0; link < kMaxNvLinks; ++link) {
    int active = 0;
    const nvmlReturn_t rc = api.device_get_nvlink_state(device, link, &active);
    if (rc == NVML_ERROR_INVALID_ARGUMENT) break;  // past the device's last link
    // NOT_SUPPORTED (a PCIe card) and inactive links lead nowhere.
    if (rc != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
    int type = 0;
    if (api.device_get_nvlink_remote_device_type &&
        api.device_get_nvlink_remote_device_type(device, link, &type) == NVML_SUCCESS &&
        type == NVML_NVLINK_DEVICE_TYPE_IBMNPU) {
      continue;
    }
    nvmlPciInfo_t remote{};
    if (api.device_get_nvlink_remote_pci_info(device, link, &remote) != NVML_SUCCESS) continue;
    ends.emplace_back(remote.bus_id, strnlen(remote.bus_id, sizeof remote.bus_id));
  }
  return ends;
}

// Fills nvlink_domain, pcie_switch and numa_node of every GPU (see topology.h for the rules).
void describe_topology(const NvmlApi& api, const std::vector<nvmlDevice_t>& devices,
                       std::vector<model::Gpu>& gpus) {
  const size_t count = devices.size();
  std::vector<std::string> bus_ids;
  std::vector<std::vector<std::string>> far_ends;
  bool nvlink_known = true;
  for (nvmlDevice_t device : devices) {
    bus_ids.push_back(pci_bus_id(api, device));
    auto ends = nvlink_far_ends(api, device);
    nvlink_known = nvlink_known && ends.has_value() && !bus_ids.back().empty();
    far_ends.push_back(ends.value_or(std::vector<std::string>()));
  }
  const auto nvlinked =
      nvlink_known ? nvlink_matrix(bus_ids, far_ends) : std::vector<std::vector<bool>>();

  std::vector<std::vector<int>> levels;
  if (api.device_get_topology_common_ancestor) {
    levels.assign(count, std::vector<int>(count, kTopologyUnknown));
    for (size_t i = 0; i < count; ++i) {
      for (size_t j = i + 1; j < count; ++j) {
        int level = kTopologyUnknown;
        if (api.device_get_topology_common_ancestor(devices[i], devices[j], &level) ==
            NVML_SUCCESS) {
          levels[i][j] = levels[j][i] = level;
        }
      }
    }
  }

  const auto domains = nvlink_domains(count, nvlinked);
  const auto switches = pcie_switch_groups(count, levels);
  for (size_t i = 0; i < count; ++i) {
    gpus[i].nvlink_domain = domains[i];
    gpus[i].pcie_switch = switches[i];
    // The kernel's node of the PCI device first: it is the CPU side's node, which is what placing
    // CPU and memory next to the GPUs needs. NVML's own answer exists only where the GPU's memory
    // is itself a NUMA node (Grace Hopper), and there it names that memory, not the CPU.
    gpus[i].numa_node = pci_numa_node(bus_ids[i]);
    gpus[i].pci_address = sysfs_pci_address(bus_ids[i]);
    unsigned node = 0;
    if (gpus[i].numa_node < 0 && api.device_get_numa_node_id &&
        api.device_get_numa_node_id(devices[i], &node) == NVML_SUCCESS) {
      gpus[i].numa_node = static_cast<int>(node);
    }
  }
}

}  // namespace

Result<std::vector<model::Gpu>> discover_nvml_gpus(const char* library) {
  Library lib(dlopen(library, RTLD_NOW | RTLD_LOCAL));
  if (!lib.get()) {
    const char* why = dlerror();
    return fail(unavailable(fmt::format("cannot load {}: {}", library, why ? why : "unknown")));
  }
  NvmlApi api{};
  const bool bound =
      bind(lib.get(), "nvmlInit_v2", &api.init_v2) &&
      bind(lib.get(), "nvmlShutdown", &api.shutdown) &&
      bind(lib.get(), "nvmlDeviceGetCount_v2", &api.device_get_count_v2) &&
      bind(lib.get(), "nvmlDeviceGetHandleByIndex_v2", &api.device_get_handle_by_index_v2) &&
      bind(lib.get(), "nvmlDeviceGetName", &api.device_get_name) &&
      bind(lib.get(), "nvmlDeviceGetUUID", &api.device_get_uuid) &&
      bind(lib.get(), "nvmlDeviceGetMemoryInfo", &api.device_get_memory_info) &&
      bind(lib.get(), "nvmlErrorString", &api.error_string);
  if (!bound) {
    return fail(unavailable(fmt::format("{} lacks the NVML functions gpurent needs", library)));
  }
  if (!bind(lib.get(), "nvmlDeviceGetPciInfo_v3", &api.device_get_pci_info)) {
    bind(lib.get(), "nvmlDeviceGetPciInfo_v2", &api.device_get_pci_info);
  }
  bind(lib.get(), "nvmlDeviceGetTopologyCommonAncestor", &api.device_get_topology_common_ancestor);
  bind(lib.get(), "nvmlDeviceGetNvLinkState", &api.device_get_nvlink_state);
  bind(lib.get(), "nvmlDeviceGetNvLinkRemotePciInfo_v2", &api.device_get_nvlink_remote_pci_info);
  bind(lib.get(), "nvmlDeviceGetNvLinkRemoteDeviceType", &api.device_get_nvlink_remote_device_type);
  bind(lib.get(), "nvmlDeviceGetNumaNodeId", &api.device_get_numa_node_id);
  if (auto rc = api.init_v2(); rc != NVML_SUCCESS) {
    return fail(unavailable(fmt::format("nvmlInit_v2 failed: {}", api.error_string(rc))));
  }
  unsigned count = 0;
  Result<std::vector<model::Gpu>> result = std::vector<model::Gpu>();
  if (auto rc = api.device_get_count_v2(&count); rc != NVML_SUCCESS) {
    result = fail(Error{ErrorKind::kInternal, "nvml_error",
                        fmt::format("nvmlDeviceGetCount_v2 failed: {}", api.error_string(rc))});
  } else if (count > kMaxDevices) {
    result = fail(Error{ErrorKind::kInternal, "nvml_error",
                        fmt::format("NVML reports {} GPUs, more than the {} one node may have",
                                    count, kMaxDevices)});
  }
  std::vector<nvmlDevice_t> devices;
  for (unsigned index = 0; result && index < count; ++index) {
    nvmlDevice_t device = nullptr;
    auto gpu = describe_device(api, index, device);
    if (!gpu) {
      result = fail(std::move(gpu).error());
    } else {
      devices.push_back(device);
      result->push_back(std::move(*gpu));
    }
  }
  if (result) describe_topology(api, devices, *result);
  api.shutdown();
  return result;
}

}  // namespace gpurent::agent
