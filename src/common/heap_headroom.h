// Keeps a reserve of heap memory touched ahead of use.
//
// A server that takes in a large array job grows its heap by tens of MB within a few hundred
// milliseconds, and every fresh page is a fault in which the kernel zeroes it, which in a virtual
// machine can cost more than the work itself (bench/RESULTS.md, gpurent_array_bench). The allocator
// (jemalloc, src/malloc_conf.cc) never gives freed memory back to the kernel, so memory that was
// touched once and freed is reused without a fault. HeapHeadroom keeps `bytes` of such memory
// ready: once a second, on a thread of its own at low priority, it asks jemalloc how much freed,
// touched memory it holds, and when that is below half the reserve it allocates the reserve (the
// allocator hands out what it holds first, and maps the rest), touches it, and frees it. The JVM's
// AlwaysPreTouch does this once at start; this keeps doing it as the heap grows, so that the
// reserve is there at 5,000 nodes as at 10. The cost is resident memory: up to `bytes` above the
// high-water mark. It does not top up while a burst is drawing on the reserve (heap_at_rest):
// touching a few hundred MiB takes a core for about 0.15 s, which a burst on two cores needs for
// its own threads (the API, the committer, a simulated fleet); it tops up once the burst is over.
// The server keeps one (server.cc), and so does a simulated fleet (agent/sim_fleet.h), whose
// thousand nodes take their desired states and write their reports in the same burst; a single
// node's agent does not, its footprint is meant to stay small.
//
// Without jemalloc in the process (a sanitizer build, -DGPURENT_JEMALLOC=OFF) it does nothing: it
// finds jemalloc's mallctl at run time, so no library depends on it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <thread>

namespace gpurent {

inline constexpr size_t kHeapHeadroomBytes = size_t{256} << 20;

// The freed, already touched memory the allocator holds now; nullopt without jemalloc.
std::optional<size_t> allocator_reusable_bytes();

// Whether the heap is at rest: the allocator's reusable memory did not fall by more than a
// sixteenth of the reserve since the previous check (none yet: at rest). A slow drift (an idle
// server's series growing) is rest; a burst taking from the reserve is not.
bool heap_at_rest(size_t reserve, size_t reusable_now, std::optional<size_t> reusable_before);

class HeapHeadroom {
 public:
  explicit HeapHeadroom(size_t bytes);  // 0: off
  ~HeapHeadroom();
  HeapHeadroom(const HeapHeadroom&) = delete;
  HeapHeadroom& operator=(const HeapHeadroom&) = delete;

  // Tops the reserve up now if it is below half, burst or not (the thread's step once the heap
  // is at rest; for tests).
  void top_up();

 private:
  void loop();

  const size_t bytes_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpurent
