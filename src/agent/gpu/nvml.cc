#include "agent/gpu/nvml.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include "model/gpu_catalog.h"

namespace gpurent::agent {
namespace {

// The subset of the NVML C API the agent uses, declared here rather than taken from nvml.h so that
// the build needs no CUDA headers. Layouts and signatures follow NVML's public API reference.
using nvmlReturn_t = int;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
};
// NVML_DEVICE_NAME_V2_BUFFER_SIZE and NVML_DEVICE_UUID_V2_BUFFER_SIZE.
constexpr unsigned kNameBufferSize = 96;
constexpr unsigned kUuidBufferSize = 96;
// More than any single host carries (an HGX chassis has 8; NVSwitch systems up to 16 per host).
constexpr unsigned kMaxDevices = 64;

struct NvmlApi {
  nvmlReturn_t (*init_v2)();
  nvmlReturn_t (*shutdown)();
  nvmlReturn_t (*device_get_count_v2)(unsigned* count);
  nvmlReturn_t (*device_get_handle_by_index_v2)(unsigned index, nvmlDevice_t* device);
  nvmlReturn_t (*device_get_name)(nvmlDevice_t device, char* name, unsigned length);
  nvmlReturn_t (*device_get_uuid)(nvmlDevice_t device, char* uuid, unsigned length);
  nvmlReturn_t (*device_get_memory_info)(nvmlDevice_t device, nvmlMemory_t* memory);
  const char* (*error_string)(nvmlReturn_t result);
};

Error unavailable(std::string message) {
  return {ErrorKind::kUnavailable, "nvml_unavailable", std::move(message)};
}

// Unloads the library on every return path.
class Library {
 public:
  explicit Library(void* handle) : handle_(handle) {}
  ~Library() {
    if (handle_) dlclose(handle_);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  void* get() const { return handle_; }

 private:
  void* handle_;
};

template <class Fn>
bool bind(void* handle, const char* name, Fn* out) {
  void* symbol = dlsym(handle, name);
  *out = reinterpret_cast<Fn>(symbol);
  return symbol != nullptr;
}

Result<model::Gpu> describe_device(const NvmlApi& api, unsigned index) {
  const auto failed = [&](std::string_view call, nvmlReturn_t rc) {
    return Error{ErrorKind::kInternal, "nvml_error",
                 fmt::format("{} for GPU {} failed: {}", call, index, api.error_string(rc))};
  };
  nvmlDevice_t device = nullptr;
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
  for (unsigned index = 0; result && index < count; ++index) {
    auto gpu = describe_device(api, index);
    if (!gpu) {
      result = fail(std::move(gpu).error());
    } else {
      result->push_back(std::move(*gpu));
    }
  }
  api.shutdown();
  return result;
}

}  // namespace gpurent::agent
