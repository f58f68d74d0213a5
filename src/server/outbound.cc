#include "server/outbound.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <charconv>
#include <span>

namespace gpurent::server {
namespace {

namespace ip = boost::asio::ip;

// Docker's default registry's port, for a registry written without one.
constexpr uint16_t kRegistryPort = 443;

std::string lower_name(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!out.empty() && out.back() == '.') out.pop_back();  // "example.com." is "example.com"
  return out;
}

Error invalid_outbound(std::string_view entry, std::string_view why) {
  return Error::invalid("invalid_outbound", fmt::format("'{}' {}", entry, why));
}

struct HostPort {
  std::string host;
  std::optional<uint16_t> port;
};

// "host", "host:port", "[v6]", "[v6]:port", or a bare IPv6 address (more than one ':').
Result<HostPort> split_host_port(std::string_view text) {
  std::string_view host = text;
  std::string_view port;
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return fail(invalid_outbound(text, "lacks its ']'"));
    host = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) {
      return fail(invalid_outbound(text, "has text after its ']'"));
    }
    if (!rest.empty()) port = rest.substr(1);
  } else if (std::ranges::count(text, ':') == 1) {
    host = text.substr(0, text.find(':'));
    port = text.substr(text.find(':') + 1);
  }
  if (host.empty()) return fail(invalid_outbound(text, "names no host"));
  HostPort out{std::string(host), std::nullopt};
  if (!port.empty() || text.ends_with(':')) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return fail(invalid_outbound(text, "has a port that is not 1 to 65535"));
    }
    out.port = static_cast<uint16_t>(value);
  }
  return out;
}

bool valid_host_name(std::string_view name) {
  return !name.empty() && name.size() <= 253 && std::ranges::all_of(name, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
  });
}

// Docker Hub answers under several names; registries are compared under one.
std::string registry_name(std::string_view host) {
  std::string name = lower_name(host);
  return name == "index.docker.io" || name == "registry-1.docker.io" ? "docker.io" : name;
}

// An IPv4 address carried in IPv6 (mapped, ::ffff:a.b.c.d, or NAT64's well-known prefix,
// 64:ff9b::a.b.c.d, which a NAT64 gateway turns into a.b.c.d) as that IPv4 address.
ip::address unmapped(const ip::address& address) {
  if (!address.is_v6()) return address;
  const auto v6 = address.to_v6();
  if (v6.is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, v6);
  const auto bytes = v6.to_bytes();
  constexpr std::array<unsigned char, 12> kNat64 = {0, 0x64, 0xff, 0x9b};
  if (std::equal(kNat64.begin(), kNat64.end(), bytes.begin())) {
    return ip::address_v4(ip::address_v4::bytes_type{bytes[12], bytes[13], bytes[14], bytes[15]});
  }
  return address;
}

// Whether the first `prefix` bits of two addresses' bytes agree.
bool same_prefix(std::span<const unsigned char> a, std::span<const unsigned char> b,
                 unsigned prefix) {
  for (size_t i = 0; prefix > 0; ++i, prefix -= std::min(prefix, 8u)) {
    const unsigned bits = std::min(prefix, 8u);
    const auto mask = static_cast<unsigned char>(0xff << (8 - bits));
    if ((a[i] & mask) != (b[i] & mask)) return false;
  }
  return true;
}

bool in_network(const ip::address& base, unsigned prefix, const ip::address& address) {
  if (base.is_v4() != address.is_v4()) return false;
  if (base.is_v4()) return same_prefix(base.to_v4().to_bytes(), address.to_v4().to_bytes(), prefix);
  return same_prefix(base.to_v6().to_bytes(), address.to_v6().to_bytes(), prefix);
}

bool in(const ip::address& address, std::string_view cidr_base, unsigned prefix) {
  return in_network(ip::make_address(cidr_base), prefix, address);
}

}  // namespace

AddressRange classify(const ip::address& given) {
  const ip::address address = unmapped(given);
  if (address.is_v4()) {
    if (in(address, "0.0.0.0", 8)) return AddressRange::kUnspecified;
    if (in(address, "127.0.0.0", 8)) return AddressRange::kLoopback;
    if (in(address, "10.0.0.0", 8) || in(address, "172.16.0.0", 12) ||
        in(address, "192.168.0.0", 16)) {
      return AddressRange::kPrivate;
    }
    if (in(address, "169.254.0.0", 16)) return AddressRange::kLinkLocal;
    if (in(address, "100.64.0.0", 10)) return AddressRange::kShared;
    if (in(address, "224.0.0.0", 4)) return AddressRange::kMulticast;
    if (in(address, "240.0.0.0", 4)) return AddressRange::kReserved;
    return AddressRange::kPublic;
  }
  if (address.is_unspecified()) return AddressRange::kUnspecified;
  if (address.is_loopback()) return AddressRange::kLoopback;
  if (in(address, "fc00::", 7) || in(address, "fec0::", 10)) return AddressRange::kPrivate;
  if (in(address, "fe80::", 10)) return AddressRange::kLinkLocal;
  if (in(address, "ff00::", 8)) return AddressRange::kMulticast;
  if (in(address, "::", 96)) return AddressRange::kReserved;
  return AddressRange::kPublic;
}

std::string_view range_name(AddressRange range) {
  switch (range) {
    case AddressRange::kPublic:
      return "public";
    case AddressRange::kLoopback:
      return "loopback";
    case AddressRange::kPrivate:
      return "private";
    case AddressRange::kLinkLocal:
      return "link-local";
    case AddressRange::kShared:
      return "shared (carrier-grade NAT)";
    case AddressRange::kUnspecified:
      return "unspecified";
    case AddressRange::kMulticast:
      return "multicast";
    case AddressRange::kReserved:
      return "reserved";
  }
  return "unknown";
}

std::string image_registry(std::string_view image) {
  const size_t slash = image.find('/');
  if (slash == std::string_view::npos) return "docker.io";
  const std::string_view first = image.substr(0, slash);
  const bool host = first.find_first_of(".:") != std::string_view::npos || first == "localhost" ||
                    std::ranges::any_of(
                        first, [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
  return host ? registry_name(first) : "docker.io";
}

Result<OutboundPolicy> OutboundPolicy::make(const std::vector<std::string>& allow,
                                            const std::vector<std::string>& registries) {
  OutboundPolicy policy;
  for (const auto& entry : allow) {
    boost::system::error_code ec;
    if (const size_t slash = entry.find('/'); slash != std::string::npos) {
      const auto base = ip::make_address(entry.substr(0, slash), ec);
      unsigned prefix = 0;
      const std::string_view bits = std::string_view(entry).substr(slash + 1);
      const auto [end, parsed] = std::from_chars(bits.data(), bits.data() + bits.size(), prefix);
      if (ec || parsed != std::errc() || end != bits.data() + bits.size() ||
          prefix > (base.is_v4() ? 32u : 128u)) {
        return fail(invalid_outbound(entry, "is not a CIDR such as 10.1.0.0/16 or fd00::/8"));
      }
      if (unmapped(base) != base) {
        return fail(invalid_outbound(entry, "is an IPv4 network inside IPv6: write it as IPv4"));
      }
      policy.networks_.push_back({base, prefix, std::nullopt});
      continue;
    }
    GPURENT_TRY(parts, split_host_port(entry));
    const auto address = ip::make_address(parts.host, ec);
    if (!ec) {
      const ip::address plain = unmapped(address);
      policy.networks_.push_back({plain, plain.is_v4() ? 32u : 128u, parts.port});
    } else if (valid_host_name(parts.host)) {
      policy.hosts_.push_back({lower_name(parts.host), parts.port});
    } else {
      return fail(invalid_outbound(entry, "is neither a host name, an address nor a CIDR"));
    }
  }
  for (const auto& entry : registries) {
    GPURENT_TRY(parts, split_host_port(entry));
    if (!valid_host_name(parts.host)) {
      return fail(invalid_outbound(entry, "is not a registry: host or host:port"));
    }
    policy.registries_.push_back({registry_name(parts.host), parts.port});
  }
  return policy;
}

bool OutboundPolicy::allows_name(std::string_view host, uint16_t port) const {
  const std::string name = lower_name(host);
  return std::ranges::any_of(hosts_, [&](const Host& allowed) {
    return allowed.name == name && (!allowed.port || *allowed.port == port);
  });
}

Status OutboundPolicy::check(std::string_view host, uint16_t port, const ip::address& given) const {
  const ip::address address = unmapped(given);
  const AddressRange range = classify(address);
  if (range == AddressRange::kPublic || allows_name(host, port)) return {};
  for (const auto& network : networks_) {
    if ((!network.port || *network.port == port) &&
        in_network(network.base, network.prefix, address)) {
      return {};
    }
  }
  return fail(Error{ErrorKind::kPermissionDenied, "outbound_refused",
                    fmt::format("{} is {} ({} address): the server connects there only when "
                                "[outbound] allow lists the host, the address or its network",
                                host, address.to_string(), range_name(range))});
}

Status OutboundPolicy::check_name(std::string_view host, uint16_t port) const {
  boost::system::error_code ec;
  const auto address = ip::make_address(std::string(host), ec);
  if (!ec) return check(host, port, address);
  const std::string name = lower_name(host);
  if ((name == "localhost" || name.ends_with(".localhost")) && !allows_name(name, port)) {
    return fail(Error{ErrorKind::kPermissionDenied, "outbound_refused",
                      fmt::format("{} is this machine (loopback): the server connects there only "
                                  "when [outbound] allow lists it",
                                  host)});
  }
  return {};
}

Result<std::vector<ip::tcp::endpoint>> OutboundPolicy::resolve(std::string_view host,
                                                               uint16_t port) const {
  boost::asio::io_context io;
  ip::tcp::resolver resolver(io);
  boost::system::error_code ec;
  const auto results = resolver.resolve(std::string(host), std::to_string(port), ec);
  if (ec || results.empty()) {
    return fail(Error{ErrorKind::kUnavailable, "connection_failed",
                      fmt::format("cannot resolve '{}': {}", host, ec.message())});
  }
  std::vector<ip::tcp::endpoint> endpoints;
  for (const auto& result : results) {
    GPURENT_CHECK(check(host, port, result.endpoint().address()));
    endpoints.push_back(result.endpoint());
  }
  return endpoints;
}

Status OutboundPolicy::check_image(std::string_view image) const {
  const std::string registry = image_registry(image);
  auto parts = split_host_port(registry);
  const auto refuse = [&](std::string_view why) {
    return fail(Error::unprocessable(
        "image_registry_not_allowed",
        fmt::format("image '{}' is from registry {}, {}", image, registry, why)));
  };
  if (!parts) return refuse("which is not a registry name");
  const uint16_t port = parts->port.value_or(kRegistryPort);
  if (!registries_.empty()) {
    const bool listed = std::ranges::any_of(registries_, [&](const Host& allowed) {
      return allowed.name == parts->host && (!allowed.port || allowed.port == parts->port);
    });
    if (listed) return {};
    std::string names;
    for (const auto& allowed : registries_) {
      names += (names.empty() ? "" : ", ") + allowed.name +
               (allowed.port ? fmt::format(":{}", *allowed.port) : "");
    }
    return refuse(fmt::format("which this platform does not pull from (it pulls from: {})", names));
  }
  if (auto checked = check_name(parts->host, port); !checked) {
    return refuse(
        fmt::format("which this platform does not pull from: {}", checked.error().message));
  }
  return {};
}

}  // namespace gpurent::server
