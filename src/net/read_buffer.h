// The room every HTTP connection's read buffer starts with (the server's, the CLI's and agent's
// client, the simulated fleet's).
//
// Beast reads at most max(512, the buffer's free capacity) bytes at a time, and a buffer whose
// reader takes every read away (a body parser does) never grows: a 2 KB agent report would
// arrive in four reads, each a system call and a round through the reactor. With this much room
// a report, a long-poll or a node's desired state comes in one read.
#pragma once

#include <cstddef>

namespace gpurent::net {

inline constexpr std::size_t kReadBufferBytes = 4096;

}  // namespace gpurent::net
