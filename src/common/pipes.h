// Reading a child process's output pipes without letting either one fill and block it.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string_view>

namespace gpurent {

using PipeSink = std::function<void(std::string_view piece)>;

// Reads the two descriptors (a child's stdout and stderr, say) until both end, handing each piece
// to its sink as it arrives, and closes them. With a deadline, stops reading when it passes and
// returns false (the descriptors are closed all the same); true otherwise. Blocks the caller.
bool drain_pipes(int first, const PipeSink& on_first, int second, const PipeSink& on_second,
                 std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

// In a child just forked to run a command whose output is drained: no signal blocked (the
// parent's mask is inherited), a session of its own (so that the whole group can be killed), and
// stdin, stdout, stderr from these descriptors. System calls only: safe between fork and exec in
// a multithreaded parent.
void become_command_child(int stdin_fd, int stdout_fd, int stderr_fd);

}  // namespace gpurent
