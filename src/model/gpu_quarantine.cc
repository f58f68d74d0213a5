#include "model/gpu_quarantine.h"

#include <algorithm>
#include <array>

namespace gpurent::model {

bool is_fatal_xid(int64_t code) {
  static constexpr std::array<int64_t, 4> kFatal = {48, 79, 94, 95};
  return std::find(kFatal.begin(), kFatal.end(), code) != kFatal.end();
}

}  // namespace gpurent::model
