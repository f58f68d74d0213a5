#include "common/heap_headroom.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace gpurent {
namespace {

constexpr size_t kReserve = size_t{64} << 20;

// A reserve topped up before each test; skipped where jemalloc is not in the process.
class HeapHeadroomTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!allocator_reusable_bytes()) GTEST_SKIP() << "jemalloc is not in this process";
    headroom_.top_up();
  }

  HeapHeadroom headroom_{kReserve};
};

long this_threads_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

TEST_F(HeapHeadroomTest, KeepsTouchedMemoryReadyForReuse) {
  const auto reusable = allocator_reusable_bytes();
  ASSERT_TRUE(reusable);
  EXPECT_GE(*reusable, kReserve / 2);
}

// What the reserve is for: the many small objects of a burst (an array's members) land in it, not
// in freshly mapped memory, which is what src/malloc_conf.cc's lg_extent_max_active_fit is for.
using Burst = std::vector<std::unique_ptr<std::string>>;

// The faults of one burst of small objects (about 20 MiB, within the reserve), kept in `burst`.
// The vector that holds them (800 KB, a large allocation the reserve is not for) is made and
// touched before the count starts: where earlier tests left the allocator, it may be fresh
// memory, about 200 faults that are not the burst's.
long burst_page_faults(Burst& burst) {
  constexpr size_t kObjects = 100'000;
  const size_t first = burst.size();
  burst.resize(first + kObjects);
  const long before = this_threads_page_faults();
  for (size_t i = 0; i < kObjects; ++i) {
    burst[first + i] = std::make_unique<std::string>(160 + (i % 4) * 16, 'x');
  }
  return this_threads_page_faults() - before;
}

TEST_F(HeapHeadroomTest, SmallObjectsAreMadeInTheReserveWithoutPageFaults) {
  // A burst in fresh small pages faults once per page, about 5,000 times; in the reserve it faults
  // only for the allocator's own bookkeeping, which grows with how earlier tests in the process
  // left the heap (60 to 140 faults seen after the agent's tests). A tenth of the burst's pages is
  // the line between the two.
  constexpr long kMostFaults = 512;
  // On a loaded machine the kernel now and then backs one 2 MiB piece of the reserve with small
  // pages (512 faults at once, seen in a CI-like run and never twice in a row). A second burst,
  // after topping the reserve up again and with the first still held (so it cannot reuse the
  // first's memory), tells that apart from a reserve the allocator does not use (every burst).
  Burst held;
  long faults = burst_page_faults(held);
  if (faults >= kMostFaults) {
    headroom_.top_up();
    faults = std::min(faults, burst_page_faults(held));
  }
  EXPECT_LT(faults, kMostFaults);
}

TEST(HeapAtRestTest, ABurstTakingFromTheReserveIsNotRestButADriftIs) {
  constexpr size_t kMiB = size_t{1} << 20;
  EXPECT_TRUE(heap_at_rest(256 * kMiB, 10 * kMiB, std::nullopt));  // the first check
  EXPECT_TRUE(heap_at_rest(256 * kMiB, 200 * kMiB, 200 * kMiB));   // unchanged
  EXPECT_TRUE(heap_at_rest(256 * kMiB, 240 * kMiB, 200 * kMiB));   // freed memory came back
  EXPECT_TRUE(heap_at_rest(256 * kMiB, 185 * kMiB, 200 * kMiB));   // 15 MiB: a drift
  EXPECT_FALSE(heap_at_rest(256 * kMiB, 180 * kMiB, 200 * kMiB));  // 20 MiB: a burst
  EXPECT_FALSE(heap_at_rest(256 * kMiB, 0, 200 * kMiB));           // all of it
  EXPECT_TRUE(heap_at_rest(256 * kMiB, 0, 0));                     // spent, and over
}

}  // namespace
}  // namespace gpurent
