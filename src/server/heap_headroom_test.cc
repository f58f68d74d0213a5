#include "server/heap_headroom.h"

#include <gtest/gtest.h>

namespace gpurent::server {
namespace {

TEST(HeapHeadroom, KeepsTouchedMemoryReadyForReuse) {
  if (!allocator_reusable_bytes()) GTEST_SKIP() << "jemalloc is not in this process";
  constexpr size_t kReserve = size_t{64} << 20;
  HeapHeadroom headroom(kReserve);
  headroom.top_up();
  const auto reusable = allocator_reusable_bytes();
  ASSERT_TRUE(reusable);
  EXPECT_GE(*reusable, kReserve / 2);
}

}  // namespace
}  // namespace gpurent::server
