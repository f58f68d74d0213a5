// Names the calling thread (at most 15 characters; longer names are cut), so that `top -H`,
// `perf` and /proc/<pid>/task/<tid>/comm tell the server's threads apart.
#pragma once

#include <pthread.h>

#include <algorithm>
#include <string>

namespace gpurent {

inline void name_this_thread(std::string name) {
  name.resize(std::min<size_t>(name.size(), 15));
  pthread_setname_np(pthread_self(), name.c_str());
}

}  // namespace gpurent
