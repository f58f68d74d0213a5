#include "agent/vm/passt.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "agent/tool_run.h"

namespace gpurent::agent {

namespace fs = std::filesystem;

std::vector<std::string> passt_command(const PasstNetwork& network) {
  std::vector<std::string> argv = {network.binary,
                                   "--one-off",  // ends with its QEMU
                                   "--quiet",
                                   "--runas",
                                   fmt::format("{}:{}", network.uid, network.gid),
                                   "--socket",
                                   network.socket.string(),
                                   "--log-file",
                                   network.log.string(),
                                   "--ipv4-only",
                                   "--address",
                                   std::string(kGuestAddress),
                                   "--netmask",
                                   "255.255.255.0",
                                   "--gateway",
                                   std::string(kGatewayAddress),
                                   "--no-map-gw",  // the gateway is not the node's loopback
                                   "--dns-forward",
                                   std::string(kDnsAddress),
                                   "--udp-ports",
                                   "none"};
  std::string tcp = "none";
  if (!network.forwards.empty()) {
    // Every port on the loopback only: the node API's proxy and SSH tunnel come from there.
    tcp = "127.0.0.1/";
    for (size_t i = 0; i < network.forwards.size(); ++i) {
      if (i > 0) tcp += ",";
      tcp += fmt::format("{}:{}", network.forwards[i].host_port, network.forwards[i].guest_port);
    }
  }
  argv.insert(argv.end(), {"--tcp-ports", tcp});
  return argv;
}

Status start_passt(const PasstNetwork& network) {
  std::error_code ec;
  fs::remove(network.socket, ec);
  const auto ran = run_tool({.argv = passt_command(network), .timeout = std::chrono::seconds(30)});
  // passt forks to the background once its socket listens; the parent's exit says nothing more.
  if (!fs::is_socket(network.socket, ec)) {
    return fail({ErrorKind::kInternal, "vm_start_failed",
                 ran ? fmt::format("passt did not start the VM's network: {}", ran->output)
                     : std::string("passt cannot be run (is it installed? or give the agent "
                                   "--vm-network isolated)")});
  }
  return {};
}

void release_passt(const fs::path& socket) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = socket.string();
  if (path.size() >= sizeof(address.sun_path)) return;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  // Refused: passt is gone already.
  (void)::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  ::close(fd);
}

}  // namespace gpurent::agent
