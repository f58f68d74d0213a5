#include "model/workload_fields.h"

#include <algorithm>
#include <cctype>

namespace gpurent::model {

bool valid_image(std::string_view image) {
  return !image.empty() && image.size() <= kMaxImageLength && image.front() != '-' &&
         std::all_of(image.begin(), image.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) ||
                  std::string_view("._-/:@").find(c) != std::string_view::npos;
         });
}

bool valid_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// GPURENT_SIM_DURATION_S is the tenant's: it tells a simulated node (agent --sim-nodes) how long
// the workload "runs", for load tests and benchmarks.
bool set_by_platform(std::string_view variable) {
  return (variable.starts_with("GPURENT_") && variable != "GPURENT_SIM_DURATION_S") ||
         variable == "CUDA_VISIBLE_DEVICES" || variable == "NVIDIA_VISIBLE_DEVICES" ||
         variable.starts_with("CUDA_MPS_");
}

}  // namespace gpurent::model
