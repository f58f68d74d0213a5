// Where the server may connect on its own account, and which registries tenants' images may name:
// the operator's `[outbound]` (server_config.h). Against server-side request forgery (SSRF): a URL
// someone gives the platform must not become its way into the networks around it (the cloud's
// metadata service at 169.254.169.254, an admin port on loopback, a database on the private LAN).
//
// - Addresses: a public address may always be reached. Any other (loopback, private: RFC 1918 and
//   fc00::/7, link-local: 169.254/16 and fe80::/10, shared: 100.64/10, unspecified, multicast,
//   reserved; an IPv4 address inside IPv6, ::ffff:a.b.c.d or NAT64's 64:ff9b::a.b.c.d, counts as
//   that IPv4 address) only when `allow` lists its host name (with or without a port), the address
//   itself, or a CIDR holding it.
// - Resolution: resolve() resolves a name once and checks every address it gives; the caller then
//   connects to one of those addresses, never to the name again, so a name that resolves to a
//   public address for the check and a private one for the connection (DNS rebinding) gains
//   nothing. A name with any refused address is refused whole.
// - Registries: with `registries` set, an image must name one of them (host[:port]; Docker Hub's
//   short names, "pytorch/pytorch", are "docker.io"). Without it any registry is allowed but one
//   that is visibly inside (an IP literal outside the public ranges, or localhost), unless `allow`
//   lets it. A registry name that resolves inside is not caught: the node's container engine
//   resolves it, not the server; set `registries` to close that too.
// Thread-safety: immutable once made; any thread may ask.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpurent::server {

enum class AddressRange {
  kPublic,
  kLoopback,     // 127/8, ::1
  kPrivate,      // 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10
  kLinkLocal,    // 169.254/16 (the cloud metadata service), fe80::/10
  kShared,       // 100.64/10 (carrier-grade NAT)
  kUnspecified,  // 0/8, ::
  kMulticast,    // 224/4, ff00::/8
  kReserved,     // 240/4 (and the broadcast address), ::/96 (IPv4-compatible, deprecated)
};
AddressRange classify(const boost::asio::ip::address& address);
std::string_view range_name(AddressRange range);

// The registry an image reference names, as Docker reads it: its first component when that looks
// like a host (has a '.' or a ':', is "localhost", or has upper case), else "docker.io". In lower
// case; Docker Hub's other names ("index.docker.io", "registry-1.docker.io") are "docker.io".
std::string image_registry(std::string_view image);

class OutboundPolicy {
 public:
  // Entries of `allow`: "host", "host:port", an address ("10.0.0.5", "::1", "[::1]:8080"), or a
  // CIDR ("10.1.0.0/16", "fd00::/8"); of `registries`: "host" or "host:port". An entry without a
  // port matches every port. Error "invalid_outbound" naming the entry.
  static Result<OutboundPolicy> make(const std::vector<std::string>& allow,
                                     const std::vector<std::string>& registries);
  OutboundPolicy() = default;  // nothing allowed but public addresses; any public registry

  // Whether the server may connect to `address` for a URL naming `host` and `port`.
  // Error "outbound_refused" (kPermissionDenied) naming the address and its range.
  Status check(std::string_view host, uint16_t port, const boost::asio::ip::address& address) const;
  // What can be told of host:port before resolving it: an address is check()ed, "localhost" (and
  // any name under .localhost) is refused unless allowed by name; other names pass, for resolve()
  // to check when connecting.
  Status check_name(std::string_view host, uint16_t port) const;
  // The addresses of host:port, each check()ed (see the header). Errors: check()'s, and
  // kUnavailable "connection_failed" when the name does not resolve.
  Result<std::vector<boost::asio::ip::tcp::endpoint>> resolve(std::string_view host,
                                                              uint16_t port) const;
  // Whether a tenant may name this image (see the header). Error 422 "image_registry_not_allowed".
  Status check_image(std::string_view image) const;

 private:
  struct Host {
    std::string name;  // lower case, without a trailing dot
    std::optional<uint16_t> port;
  };
  struct Network {
    boost::asio::ip::address base;  // IPv4 addresses as IPv4, never mapped into IPv6
    unsigned prefix = 0;
    std::optional<uint16_t> port;
  };
  bool allows_name(std::string_view host, uint16_t port) const;

  std::vector<Host> hosts_;
  std::vector<Network> networks_;
  std::vector<Host> registries_;  // empty: any registry check_name() lets through
};

}  // namespace gpurent::server
