// Outbound networking for VMs (docs/vm-runtime.md, "Network"): passt, a user-mode network stack
// that runs beside QEMU as a process of its own. The guest's packets become the host's own TCP and
// UDP sockets, so the guest reaches what the node reaches, with no tap device, bridge or firewall
// rule to set up and nothing left behind by a crash.
//
// What the guest may not reach is the node's loopback: QEMU's own user-mode networking maps the
// gateway's address to it, and the node API, the server's own port on a one-machine platform and
// other tenants' services listen there; passt is told not to (--no-map-gw), so the gateway is
// nobody. The guest gets kGuestAddress and the gateway kGatewayAddress, as under QEMU's user-mode
// networking, so that an image configured for one works with the other. The node's other
// addresses are reached as from any machine on its network (the node API there wants its secret);
// an operator who hides a network from tenants (a cloud's metadata service, say) firewalls it on
// the node, as for containers, which share the node's network.
//
// Lifetime: passt is started detached (spawn_detached, as QEMU is); once its socket listens it
// forks into a PID namespace of its own, where it sees no other process of its user's (QEMU's), and
// serves one client (--one-off): it ends when its QEMU does, however that ends, and an agent
// restart has nothing to adopt. A start that fails before QEMU connected ends it with hang_up
// (unix_socket.h).
//
// Who it runs as: passt parses everything the guest sends, so beside a confined QEMU it is no more
// than that QEMU: it runs as QEMU's user, in a mount namespace that covers the agent's data
// directory but for QEMU's own directory, where it makes its socket. Beside an unconfined QEMU it
// runs as the agent does (passt started as root drops to "nobody" unless told otherwise, and
// "nobody" could not make its socket in the run's directory). Either way it also isolates itself
// (namespaces of its own, an empty filesystem, seccomp).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/tool_run.h"
#include "agent/vm/qemu_command.h"
#include "common/result.h"

namespace gpurent::agent {

// The guest's addresses under passt: those of QEMU's user-mode networking.
inline constexpr std::string_view kGuestAddress = "10.0.2.15";
inline constexpr std::string_view kGatewayAddress = "10.0.2.2";
// DNS queries sent here go to the node's first resolver.
inline constexpr std::string_view kDnsAddress = "10.0.2.3";

struct PasstNetwork {
  std::string binary = "passt";
  std::filesystem::path socket;         // where QEMU connects (VmMachine::passt_socket)
  std::filesystem::path log;            // passt's own messages (its output)
  std::vector<VmPortForward> forwards;  // from the host's loopback into the guest
  // Set: passt runs as this user (a confined QEMU's) within `covers`, and makes `socket` as them:
  // its directory must be theirs and revealed. Unset: it runs as the agent, and keeps the agent's
  // ids, uid and gid (--runas).
  std::optional<RunAs> run_as;
  std::vector<CoveredDirectory> covers;
  unsigned uid = 0;
  unsigned gid = 0;
  // The resolvers DHCP gives the guest and kDnsAddress forwards to (guest_nameservers); empty:
  // passt reads /etc/resolv.conf itself.
  std::vector<std::string> nameservers;
};

// The node's resolvers a guest can use: the IPv4 ones of resolv_conf that are not the node's
// loopback; where it names only loopback ones (systemd-resolved's stub, 127.0.0.53, as on Ubuntu
// nodes), the upstream ones systemd-resolved lists in systemd_resolv_conf. passt leaves loopback
// resolvers out (the guest cannot reach the node's loopback), so without this a guest on such a
// node had no DNS. At most three (resolv.conf's MAXNS); none when neither file names one.
std::vector<std::string> guest_nameservers(
    const std::filesystem::path& resolv_conf = "/etc/resolv.conf",
    const std::filesystem::path& systemd_resolv_conf = "/run/systemd/resolve/resolv.conf");

// passt's argv for the network.
std::vector<std::string> passt_command(const PasstNetwork& network);

// Starts passt and returns once its socket listens (within `timeout`). Errors: kInternal
// "vm_start_failed" with passt's words (not installed, a forwarded port taken, its socket's
// directory not its user's, ...).
Status start_passt(const PasstNetwork& network,
                   std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace gpurent::agent
