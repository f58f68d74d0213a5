// Shared folders over virtio-fs (the agent's --vm-shares virtiofs; docs/vm-runtime.md, "Shared
// folders"): one virtiofsd per folder, beside QEMU, serving the folder to the guest through a
// vhost-user socket. The guest mounts it by its tag (mount -t virtiofs TAG PATH).
//
// It is QEMU 7.2's C virtiofsd (Debian's qemu-system-common ships it). It acts on the host files
// as whichever of the guest's users asked, so it must be root somewhere; it is root of a user
// namespace of its own whose ids 0..65535 are the node's guest ids (guest_ids: the run's
// tenant's block of 65536 after the workload ids, workload_users.h, which no user of the node
// has). So a file the guest's root makes is the first guest id's on the node, one its uid 1000
// makes the first + 1000's, and no file of one tenant's guests is another's; and a guest
// cannot make a file any user of the node owns, nor a set-uid program that gives a user of the
// node anything; a guest id past 65535 is refused (EINVAL). What it may do is narrowed further:
//   - sandbox=namespace: it pivots into the folder in mount, pid and network namespaces of its
//     own, so no path the guest sends, through ".." or a link, leaves the folder;
//   - modcaps=-mknod:-setfcap: no device files and no file capabilities;
//   - no xattrs (its default): nothing in security.* or trusted.* comes from the guest.
// Its cache mode stays auto (the guest's page cache holds what it read): with cache=none a 6.1
// guest kernel refuses to map a file shared (ENODEV), which model loaders do.
// Inside its namespace the folder's files of other owners (root's, say) are "nobody"'s, whose
// permissions for others it has: the runtime gives a folder to the guest's root before it is
// shared (give_folder, agent/files.h).
//
// The folder's path goes through the agent's directories, which only the node's root may enter, so
// virtiofsd gets the folder as /tmp of a mount namespace the agent makes for it before its user
// namespace (spawn_detached's private_tmp), and shares that.
//
// Lifetime: the agent listens on the socket and passes it (--fd), so virtiofsd makes no socket
// or pid file of its own (it would want /run/virtiofsd, root's); it serves the one QEMU that
// connects and ends when QEMU does, however that ends: an agent restart has nothing to adopt. A
// start that fails before QEMU connected ends it with hang_up (unix_socket.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "agent/runtime/workload_users.h"
#include "common/result.h"

namespace gpurent::agent {

inline constexpr const char* kVirtiofsdPath = "/usr/lib/qemu/virtiofsd";

struct VirtiofsShare {
  std::string binary = kVirtiofsdPath;
  std::filesystem::path socket;     // where QEMU connects (VmMachine::Share::socket)
  std::filesystem::path directory;  // what the guest sees
  std::filesystem::path log;        // virtiofsd's own messages
  uint32_t guest_ids = 0;           // the node's id of the guest's root; then 65535 more
};

// virtiofsd's argv for the share, given its socket as descriptor 3.
std::vector<std::string> virtiofsd_command(const VirtiofsShare& share);

// Listens on the share's socket and starts virtiofsd on it. Errors: kInternal "vm_start_failed"
// with the system's words (virtiofsd not installed, no user namespace).
Status start_virtiofsd(const VirtiofsShare& share);

}  // namespace gpurent::agent
