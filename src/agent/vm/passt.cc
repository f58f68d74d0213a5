#include "agent/vm/passt.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include <csignal>
#include <sstream>
#include <thread>

#include "agent/runtime/workload_files.h"
#include "agent/tool_run.h"
#include "common/files.h"

namespace gpurent::agent {

namespace fs = std::filesystem;

std::vector<std::string> passt_command(const PasstNetwork& network) {
  std::vector<std::string> argv = {network.binary,
                                   "--one-off",  // ends with its QEMU
                                   "--quiet",
                                   "--socket",
                                   network.socket.string(),
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
  if (!network.run_as)
    argv.insert(argv.end(), {"--runas", fmt::format("{}:{}", network.uid, network.gid)});
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

Status start_passt(const PasstNetwork& network, std::chrono::milliseconds timeout) {
  std::error_code ec;
  fs::remove(network.socket, ec);
  const auto pid = spawn_detached(
      {.argv = passt_command(network),
       .log = network.log,
       .run_as = network.run_as,
       .covers = network.covers,
       // None of the agent's environment (its join token): passt needs none.
       .environment = std::vector<std::string>{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}});
  if (!pid) {
    return fail({ErrorKind::kInternal, "vm_start_failed",
                 fmt::format("passt cannot be run (is it installed? or give the agent --vm-network "
                             "isolated): {}",
                             pid.error().message)});
  }
  const auto started = read_proc_stat(*pid);
  const auto running = [&] { return started && still_running(*pid, started->start_time); };
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // passt forks into a PID namespace of its own once its socket listens, and its first process
  // ends: then the socket says whether it started.
  while (!fs::is_socket(network.socket, ec)) {
    const bool ended = !running();
    if (ended && fs::is_socket(network.socket, ec)) break;
    if (ended || std::chrono::steady_clock::now() >= deadline) {
      const bool timed_out = running();
      if (timed_out) ::kill(*pid, SIGKILL);
      const std::string said = read_file(network.log, 16 << 10).value_or("");
      return fail({ErrorKind::kInternal, "vm_start_failed",
                   timed_out
                       ? fmt::format("passt made no socket within {} ms: {}", timeout.count(), said)
                       : fmt::format("passt did not start the VM's network: {}", said)});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

}  // namespace gpurent::agent
