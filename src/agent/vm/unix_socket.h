// The unix sockets between the agent, QEMU and QEMU's helpers (passt, virtiofsd). Each helper
// serves its one QEMU and ends when that QEMU goes.
#pragma once

#include <sys/un.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include "common/result.h"

namespace gpurent::agent {

// The socket's address; nullopt when the path is too long for one (108 bytes with its NUL).
std::optional<sockaddr_un> unix_address(const std::filesystem::path& socket);

// A stream socket connected to the one listening at `socket`, which may lie in a directory someone
// else controls (a confined QEMU's): the last name is not followed as a link, and must be a
// socket. A listener that does not take the connection within `timeout` (its backlog full: one put
// there that never accepts) is given up on. Errors: kUnavailable with the system's words (nothing
// listens, not a socket, the timeout passed).
inline constexpr std::chrono::milliseconds kConnectTimeout{5000};
Result<int> connect_unix(const std::filesystem::path& socket,
                         std::chrono::milliseconds timeout = kConnectTimeout);

// A socket listening at `socket` (a file left there before is replaced), close-on-exec, for a
// helper to accept on. Errors: kInternal with the system's words.
Result<int> listen_unix(const std::filesystem::path& socket);

// Ends a helper that no QEMU has connected to (a start that failed before QEMU did): connecting
// and closing is its one client (connect_unix: the name may lie in a directory QEMU's user
// controls). Nothing happens when nothing listens there.
void hang_up(const std::filesystem::path& socket);

}  // namespace gpurent::agent
