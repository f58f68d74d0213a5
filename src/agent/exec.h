// `gpurent exec` on the node: runs a command with a process run's environment and working
// directory (its launch record, workload_files.h) and streams its output as exec frames
// (model/exec_protocol.h) through the node API.
//
// The command runs in a session of its own (so the whole group can be killed), stdin from
// /dev/null, stdout and stderr on two pipes read asynchronously on the node API's io_context. It
// is killed (SIGKILL to its group) when timeout_s passes (exit frame 124 with the reason) and when
// the client goes away (the response's chunk source is dropped). Backpressure: at most
// kMaxQueuedExecBytes of output wait for the client; beyond it the pipes are not read, and the
// command blocks on its writes.
//
// Thread-safety: everything runs on the io_context's one thread.
#pragma once

#include <utility>  // before Asio: Boost 1.74 with C++20 coroutines needs it

#include <boost/asio/io_context.hpp>
#include <filesystem>

#include "agent/runtime/workload_files.h"
#include "common/result.h"
#include "model/exec_protocol.h"
#include "net/http.h"

namespace gpurent::agent {

inline constexpr size_t kMaxQueuedExecBytes = 1 << 20;

// A running process run's launch record (workload_files.h); kInternal when it cannot be read.
Result<Launch> read_run_launch(const std::filesystem::path& workload_dir);
// What entering the run's sandbox needs (sandbox.h), when the run is sandboxed. Errors: kConflict
// "instance_not_running" while its sandbox is not up yet; opening the entry failed.
Result<std::optional<SandboxEntry>> open_run_sandbox(const std::filesystem::path& workload_dir,
                                                     const Launch& launch);

// Starts the command (the Launch's env and cwd) and returns the streaming response. Errors: the
// launch record cannot be read (kInternal), the program is not found (kNotFound
// "command_not_found", before anything runs), fork/pipe failures (kInternal).
Result<net::Response> start_exec(boost::asio::io_context& io,
                                 const std::filesystem::path& workload_dir,
                                 const model::ExecRequest& request);

// The program argv[0] names: itself when it holds a '/', else the first executable file of that
// name on `path` (':'-separated, as execvp searches it).
std::optional<std::string> resolve_program(const std::string& name, std::string_view path);

}  // namespace gpurent::agent
