// The dlopen layer under every NVML user of the agent (discovery in nvml.cc, telemetry in
// telemetry/nvml_source.cc): the part of the NVML C API they share, declared here rather than
// taken from nvml.h so that the build needs no CUDA headers (layouts and values follow NVML's
// public API reference), and the library handle and symbol lookup.
#pragma once

#include <dlfcn.h>

namespace gpurent::agent::nvml {

using nvmlReturn_t = int;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;  // also: a link index past the last link
constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;
constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
constexpr int NVML_FEATURE_ENABLED = 1;
// NVML_NVLINK_MAX_LINKS of current drivers (older ones have fewer and answer INVALID_ARGUMENT).
constexpr unsigned kMaxNvLinks = 18;

struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
};

// Unloads the library when destroyed.
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

// Looks `name` up; *out is nullptr (and the result false) when the library lacks it.
template <class Fn>
bool bind(void* handle, const char* name, Fn* out) {
  void* symbol = dlsym(handle, name);
  *out = reinterpret_cast<Fn>(symbol);
  return symbol != nullptr;
}

}  // namespace gpurent::agent::nvml
