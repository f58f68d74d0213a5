#include "common/heap_headroom.h"

#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "common/threads.h"

namespace gpurent {

namespace {

// jemalloc's mallctl(), looked up in the process; null when jemalloc is not there.
using Mallctl = int (*)(const char*, void*, size_t*, void*, size_t);

Mallctl find_mallctl() {
  static const Mallctl found = reinterpret_cast<Mallctl>(dlsym(RTLD_DEFAULT, "mallctl"));
  return found;
}

// Below jemalloc's oversize threshold (8 MiB), so that the chunks come from, and go back to, the
// arena that serves every other allocation.
constexpr size_t kChunkBytes = size_t{1} << 20;
constexpr size_t kPageBytes = 4096;
constexpr auto kCheckInterval = std::chrono::seconds(1);

}  // namespace

std::optional<size_t> allocator_reusable_bytes() {
  const Mallctl mallctl = find_mallctl();
  if (!mallctl) return std::nullopt;
  // Statistics are a snapshot taken when the epoch advances.
  uint64_t epoch = 1;
  size_t size = sizeof(epoch);
  if (mallctl("epoch", &epoch, &size, &epoch, size) != 0) return std::nullopt;
  size_t page = 0;
  size = sizeof(page);
  if (mallctl("arenas.page", &page, &size, nullptr, 0) != 0) return std::nullopt;
  size_t dirty_pages = 0;
  size = sizeof(dirty_pages);
  // 4096: MALLCTL_ARENAS_ALL, every arena together.
  if (mallctl("stats.arenas.4096.pdirty", &dirty_pages, &size, nullptr, 0) != 0) {
    return std::nullopt;
  }
  return dirty_pages * page;
}

bool heap_at_rest(size_t reserve, size_t reusable_now, std::optional<size_t> reusable_before) {
  return !reusable_before || reusable_now + reserve / 16 >= *reusable_before;
}

HeapHeadroom::HeapHeadroom(size_t bytes) : bytes_(bytes) {
  if (bytes_ == 0 || !find_mallctl()) return;
  thread_ = std::thread([this] {
    name_this_thread("headroom");
    deprioritize_this_thread(10);
    loop();
  });
}

HeapHeadroom::~HeapHeadroom() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HeapHeadroom::top_up() {
  const auto reusable = allocator_reusable_bytes();
  if (!reusable || *reusable >= bytes_ / 2) return;
  std::vector<std::unique_ptr<char, decltype(&std::free)>> chunks;
  chunks.reserve(bytes_ / kChunkBytes);
  for (size_t taken = 0; taken < bytes_; taken += kChunkBytes) {
    auto* chunk = static_cast<char*>(std::malloc(kChunkBytes));
    if (!chunk) break;  // out of memory: keep what there is
    // One write per page is what faults it in; the allocator's own pages are written already.
    for (size_t offset = 0; offset < kChunkBytes; offset += kPageBytes) {
      reinterpret_cast<volatile char*>(chunk)[offset] = 0;
    }
    chunks.emplace_back(chunk, &std::free);
  }
}  // the chunks are freed here, into the allocator's reusable memory

void HeapHeadroom::loop() {
  std::optional<size_t> before;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    const auto now = allocator_reusable_bytes();
    if (now && heap_at_rest(bytes_, *now, before)) top_up();
    before = allocator_reusable_bytes();
    lock.lock();
    wake_.wait_for(lock, kCheckInterval, [this] { return stopping_; });
  }
}

}  // namespace gpurent
