// The memory allocator's configuration. The binaries link jemalloc (except under the sanitizers,
// which bring their own allocator), and jemalloc reads this at the first allocation.
//
// thp:always: jemalloc asks the kernel for transparent huge pages (madvise(MADV_HUGEPAGE)) for its
// memory. A server that takes in a large array job touches tens of thousands of fresh pages at
// once, each a page fault, and in a virtual machine a fault costs microseconds; with huge pages it
// is one fault per 2 MiB (measurements: bench/RESULTS.md, "Page faults").
// narenas:1, metadata_thp:auto: one arena, and huge pages for its metadata only once it is big,
// because the same binary is the node agent, whose resident set is meant to stay small (the agent
// footprint benchmark); with more arenas each would hold huge pages of its own. The server's
// threads allocate mostly from their thread caches, so one arena is not a point of contention.
// dirty_decay_ms:-1, muzzy_decay_ms:-1: freed memory is kept for reuse, never given back to the
// kernel: given back, a huge page is faulted in and zeroed again at its next use, and the work
// that frees and rebuilds the same structures every minute (the metering tick's ChangeSet) would
// pay that each time. The resident set stays at its high-water mark, which the load sets.
// lg_extent_max_active_fit:20: freed memory coalesces into large free extents, and by default
// jemalloc splits a free extent only for a request at least 1/64 of its size; a slab of small
// objects (a few pages) would then map fresh memory beside hundreds of free MiB, leaving the
// server's HeapHeadroom reserve (common/heap_headroom.h) unused (bench/RESULTS.md, "Free memory
// reused").
extern "C" {
// The name and type are jemalloc's interface.
const char* malloc_conf =
    "thp:always,metadata_thp:auto,narenas:1,dirty_decay_ms:-1,muzzy_decay_ms:-1,"
    "lg_extent_max_active_fit:20";
}
