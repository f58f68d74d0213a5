#include "agent/vm/passt.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include <sstream>

#include "agent/tool_run.h"
#include "common/files.h"

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
  for (const auto& nameserver : network.nameservers) argv.insert(argv.end(), {"--dns", nameserver});
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

namespace {

constexpr size_t kMaxNameservers = 3;

// The usable "nameserver" addresses of a resolv.conf (none when it cannot be read).
std::vector<std::string> usable_nameservers(const fs::path& path) {
  std::vector<std::string> found;
  const auto text = read_file(path, 64 << 10);
  if (!text) return found;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line) && found.size() < kMaxNameservers;) {
    std::istringstream words(line);
    std::string keyword, address;
    if (!(words >> keyword >> address) || keyword != "nameserver") continue;
    in_addr parsed{};
    if (::inet_pton(AF_INET, address.c_str(), &parsed) != 1) continue;  // IPv6: passt is IPv4 here
    const uint32_t host_order = ntohl(parsed.s_addr);
    if ((host_order >> 24) == 127 || host_order == 0) continue;  // the node's loopback, or none
    found.push_back(std::move(address));
  }
  return found;
}

}  // namespace

std::vector<std::string> guest_nameservers(const fs::path& resolv_conf,
                                           const fs::path& systemd_resolv_conf) {
  auto found = usable_nameservers(resolv_conf);
  if (found.empty()) found = usable_nameservers(systemd_resolv_conf);
  return found;
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

}  // namespace gpurent::agent
