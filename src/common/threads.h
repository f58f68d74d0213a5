// The server's threads: names (at most 15 characters; longer names are cut), so that `top -H`,
// `perf` and /proc/<pid>/task/<tid>/comm tell them apart, and priorities.
#pragma once

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <string>

namespace gpurent {

inline void name_this_thread(std::string name) {
  name.resize(std::min<size_t>(name.size(), 15));
  pthread_setname_np(pthread_self(), name.c_str());
}

// Lowers the calling thread's scheduling priority (Linux: a thread has a nice value of its own)
// for background work that must not take the CPU from the threads requests wait for. Best
// effort: a failure leaves the priority as it was.
inline void deprioritize_this_thread(int nice) {
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice);
}

}  // namespace gpurent
