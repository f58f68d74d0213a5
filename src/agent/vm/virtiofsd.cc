#include "agent/vm/virtiofsd.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/tool_run.h"
#include "agent/vm/unix_socket.h"

namespace gpurent::agent {

std::vector<std::string> virtiofsd_command(const VirtiofsShare& share) {
  return {share.binary, "--fd=3",
          // The folder is its /tmp (start_virtiofsd): the path to the folder goes through the
          // agent's directories, which only the node's root may enter, and virtiofsd is root only
          // in its own user namespace.
          "-o", "source=/tmp", "-o", "sandbox=namespace", "-o", "modcaps=-mknod:-setfcap", "-o",
          "no_xattr", "-o", "log_level=warn",
          // Raising its limit on open files is the node's root's to do, not its namespace's.
          "--rlimit-nofile=0"};
}

Status start_virtiofsd(const VirtiofsShare& share) {
  const auto refused = [](std::string message) {
    return fail({ErrorKind::kInternal, "vm_start_failed", std::move(message)});
  };
  auto listening = listen_unix(share.socket);
  if (!listening) return refused(listening.error().message);
  auto pid = spawn_detached({.argv = virtiofsd_command(share),
                             .log = share.log,
                             .pass_fd = *listening,
                             .private_tmp = share.directory,
                             .user_namespace = IdMapping{share.guest_ids, kGuestIdCount}});
  ::close(*listening);  // virtiofsd's now
  if (!pid) {
    return refused(
        fmt::format("{} (virtiofsd is QEMU's: Debian's qemu-system-common; or give the "
                    "agent --vm-shares 9p)",
                    pid.error().message));
  }
  return {};
}

}  // namespace gpurent::agent
