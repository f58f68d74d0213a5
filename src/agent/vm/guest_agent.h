// `gpurent exec` in a VM, through the QEMU guest agent (qemu-ga, inside the guest) on the run's
// virtio-serial port, which QEMU exposes to the host as a unix socket (VmRuntime: qga.sock).
//
// The protocol is QMP's JSON, one object a line. A session starts with guest-sync-delimited
// (the answer comes after a 0xFF byte, which discards whatever an earlier client left half-read);
// guest-exec starts a program with its argv and env and captures its output; guest-exec-status,
// polled, says whether it exited and then hands over its output (base64). The output therefore
// arrives when the command ends, not as it is printed, and qemu-ga keeps at most 16 MiB of each
// stream. A command still running at the deadline is killed in the guest (guest-exec of
// kill -KILL with its guest pid) and reported as timed out.
//
// Blocking; each call its own connection. The node API runs it on a worker thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpurent::agent {

struct GuestExecResult {
  int exit_code = 0;  // the command's, or 128 + the signal that ended it
  std::string out;
  std::string err;
  bool timed_out = false;  // killed at the deadline: exit_code is 124 (as timeout(1) says)
};

// Runs argv in the guest with env as its whole environment (qemu-ga passes no other). Errors:
// kUnavailable "guest_agent_unavailable" when the socket does not answer (the guest is booting, or
// its image has no qemu-ga), kInternal "guest_agent_error" for an answer that is not the protocol's
// or an error of qemu-ga's (a program it cannot start among them).
Result<GuestExecResult> guest_exec(const std::filesystem::path& socket,
                                   const std::vector<std::string>& argv,
                                   const std::map<std::string, std::string>& env,
                                   std::chrono::milliseconds timeout);

// Writes the host's file `from` to `to` in the guest (created, or truncated), in pieces
// (guest-file-open, guest-file-write, guest-file-close). Errors: as guest_exec's; kInternal
// "copy_failed" when `from` cannot be read.
Status guest_write_file(const std::filesystem::path& socket, const std::filesystem::path& from,
                        const std::string& to);

// Runs a command without arguments on QEMU's monitor (QMP, the same protocol: a greeting, then
// qmp_capabilities), such as "system_powerdown" (the ACPI power button). Errors: kUnavailable
// "vm_monitor_unavailable" when the socket does not answer, kInternal "guest_agent_error" for
// QEMU's refusal.
Status monitor_command(const std::filesystem::path& socket, std::string_view command);

}  // namespace gpurent::agent
