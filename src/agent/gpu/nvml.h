// GPU discovery through NVML (the NVIDIA Management Library), loaded at run time with dlopen so
// that gpurent builds and runs on hosts without an NVIDIA driver.
//
// discover_nvml_gpus() initialises NVML, lists every device (index, UUID, name, memory, catalog
// type, and its topology: NVLink domain, PCIe switch group, NUMA node, by the rules of topology.h)
// and shuts NVML down again. The topology calls are resolved one by one and are optional: a driver
// that lacks one (or answers it with an error) leaves that attribute -1, unknown. A host without
// the library, or whose driver refuses to initialise, gets an Error of kind kUnavailable with code
// "nvml_unavailable" — never a crash. A device that fails to answer gets code "nvml_error".
// Thread-safe: each call loads and unloads the library on its own (NVML reference-counts
// nvmlInit/nvmlShutdown).
#pragma once

#include <vector>

#include "common/result.h"
#include "model/node.h"

namespace gpurent::agent {

// The soname the driver package installs (the unversioned .so exists only with dev packages).
inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

// library: the shared object to load; tests pass one that does not exist or is not NVML.
Result<std::vector<model::Gpu>> discover_nvml_gpus(const char* library = kNvmlLibrary);

}  // namespace gpurent::agent
