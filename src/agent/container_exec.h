// `gpurent exec` in a container run: the command runs in the run's container through the Docker
// Engine API (DockerClient::exec_create / exec_start), with the container's environment, in
// /workspace, and its output streams as exec frames (model/exec_protocol.h), as exec.h does for
// process runs.
//
// The engine's API is blocking (client::HttpClient), so each exec has a thread of its own that
// reads the engine's stream and hands frames to the node API's io_context; it stops reading while
// kMaxQueuedExecBytes wait for the client (the engine, and then the command, wait too). The
// engine has no call to stop an exec, so the agent kills the command's process by the host PID the
// engine reports (the agent runs on the host, as the engine's containers do): when timeout_s
// passes (exit frame 124 with the reason) and when the client goes away. A program the container
// does not have ends with the engine's exit status (127, or 126), not with a 404: the engine finds
// out only when it starts it.
//
// Thread-safety: start_container_exec and the response's chunk source run on the io_context's one
// thread; the exec's thread touches only the shared state, under its mutex.
#pragma once

#include <utility>  // before Asio: Boost 1.74 with C++20 coroutines needs it

#include <boost/asio/io_context.hpp>
#include <string>

#include "common/result.h"
#include "model/exec_protocol.h"
#include "net/http.h"

namespace gpurent::agent {

inline constexpr std::string_view kContainerWorkdir = "/workspace";

// Creates the exec in the container (so that a container that is gone or stopped is an Error
// here, kConflict or kNotFound from the engine) and returns the streaming response.
Result<net::Response> start_container_exec(boost::asio::io_context& io,
                                           const std::string& socket_path, std::string container,
                                           const model::ExecRequest& request);

}  // namespace gpurent::agent
