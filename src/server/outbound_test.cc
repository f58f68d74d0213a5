#include "server/outbound.h"

#include <gtest/gtest.h>

namespace gpurent::server {
namespace {

using boost::asio::ip::make_address;

AddressRange range(const char* address) { return classify(make_address(address)); }

OutboundPolicy policy(const std::vector<std::string>& allow,
                      const std::vector<std::string>& registries = {}) {
  auto made = OutboundPolicy::make(allow, registries);
  EXPECT_TRUE(made) << made.error().message;
  return made ? *made : OutboundPolicy();
}

bool allowed(const OutboundPolicy& p, const char* host, uint16_t port, const char* address) {
  return p.check(host, port, make_address(address)).has_value();
}

TEST(OutboundTest, ClassifiesIpv4Ranges) {
  EXPECT_EQ(range("93.184.216.34"), AddressRange::kPublic);
  EXPECT_EQ(range("8.8.8.8"), AddressRange::kPublic);
  EXPECT_EQ(range("127.0.0.1"), AddressRange::kLoopback);
  EXPECT_EQ(range("127.255.0.9"), AddressRange::kLoopback);
  EXPECT_EQ(range("10.1.2.3"), AddressRange::kPrivate);
  EXPECT_EQ(range("172.16.0.1"), AddressRange::kPrivate);
  EXPECT_EQ(range("172.31.255.255"), AddressRange::kPrivate);
  EXPECT_EQ(range("172.32.0.1"), AddressRange::kPublic);  // just past 172.16/12
  EXPECT_EQ(range("192.168.1.1"), AddressRange::kPrivate);
  EXPECT_EQ(range("169.254.169.254"), AddressRange::kLinkLocal);  // the metadata service
  EXPECT_EQ(range("100.64.0.1"), AddressRange::kShared);
  EXPECT_EQ(range("100.127.255.255"), AddressRange::kShared);
  EXPECT_EQ(range("100.128.0.1"), AddressRange::kPublic);
  EXPECT_EQ(range("0.0.0.0"), AddressRange::kUnspecified);
  EXPECT_EQ(range("224.0.0.251"), AddressRange::kMulticast);
  EXPECT_EQ(range("255.255.255.255"), AddressRange::kReserved);
}

TEST(OutboundTest, ClassifiesIpv6RangesAndIpv4InsideIpv6) {
  EXPECT_EQ(range("2606:4700::1111"), AddressRange::kPublic);
  EXPECT_EQ(range("::1"), AddressRange::kLoopback);
  EXPECT_EQ(range("::"), AddressRange::kUnspecified);
  EXPECT_EQ(range("fd00::1"), AddressRange::kPrivate);
  EXPECT_EQ(range("fc00::1"), AddressRange::kPrivate);
  EXPECT_EQ(range("fe80::1"), AddressRange::kLinkLocal);
  EXPECT_EQ(range("ff02::1"), AddressRange::kMulticast);
  // IPv4-mapped and NAT64 addresses are their IPv4 address.
  EXPECT_EQ(range("::ffff:127.0.0.1"), AddressRange::kLoopback);
  EXPECT_EQ(range("::ffff:169.254.169.254"), AddressRange::kLinkLocal);
  EXPECT_EQ(range("::ffff:8.8.8.8"), AddressRange::kPublic);
  EXPECT_EQ(range("64:ff9b::a9fe:a9fe"), AddressRange::kLinkLocal);
  EXPECT_EQ(range("::7f00:1"), AddressRange::kReserved);  // IPv4-compatible, deprecated
}

TEST(OutboundTest, PublicAddressesPassAndOthersOnlyWhenAllowed) {
  const OutboundPolicy none;
  EXPECT_TRUE(allowed(none, "hooks.example.com", 443, "93.184.216.34"));
  for (const char* inside : {"127.0.0.1", "10.0.0.1", "169.254.169.254", "100.64.1.1", "::1",
                             "fd00::5", "fe80::1", "0.0.0.0", "224.0.0.1"}) {
    const auto refused = none.check("hooks.example.com", 443, make_address(inside));
    ASSERT_FALSE(refused) << inside;
    EXPECT_EQ(refused.error().code, "outbound_refused");
    EXPECT_NE(refused.error().message.find(inside), std::string::npos) << refused.error().message;
  }
  const auto mapped = none.check("h", 443, make_address("::ffff:10.0.0.1"));
  ASSERT_FALSE(mapped);  // named as the IPv4 address it is
  EXPECT_NE(mapped.error().message.find("10.0.0.1 (private address)"), std::string::npos);

  const OutboundPolicy some =
      policy({"Hooks.Internal", "registry.internal:5000", "10.1.0.0/16", "127.0.0.1", "[::1]:8080",
              "fd00:1::/32", "192.168.7.7:9000"});
  // A host by its name, any port unless one is given; case and a trailing dot do not matter.
  EXPECT_TRUE(allowed(some, "hooks.internal", 80, "10.9.9.9"));
  EXPECT_TRUE(allowed(some, "HOOKS.internal.", 8443, "10.9.9.9"));
  EXPECT_TRUE(allowed(some, "registry.internal", 5000, "10.9.9.9"));
  EXPECT_FALSE(allowed(some, "registry.internal", 5001, "10.9.9.9"));
  EXPECT_FALSE(allowed(some, "evil.internal", 80, "10.9.9.9"));
  // CIDRs and addresses, by the address connected to, whatever the name.
  EXPECT_TRUE(allowed(some, "anything", 80, "10.1.200.3"));
  EXPECT_FALSE(allowed(some, "anything", 80, "10.2.0.1"));
  EXPECT_TRUE(allowed(some, "127.0.0.1", 9000, "127.0.0.1"));
  EXPECT_TRUE(allowed(some, "localhost", 9000, "::ffff:127.0.0.1"));  // mapped: the same address
  EXPECT_FALSE(allowed(some, "localhost", 9000, "127.0.0.2"));
  EXPECT_TRUE(allowed(some, "::1", 8080, "::1"));
  EXPECT_FALSE(allowed(some, "::1", 8081, "::1"));
  EXPECT_TRUE(allowed(some, "x", 1, "fd00:1:ffff::1"));
  EXPECT_FALSE(allowed(some, "x", 1, "fd00:2::1"));
  EXPECT_TRUE(allowed(some, "x", 9000, "192.168.7.7"));
  EXPECT_FALSE(allowed(some, "x", 9001, "192.168.7.7"));
}

TEST(OutboundTest, RefusesEntriesThatAreNotHostsAddressesOrCidrs) {
  for (const char* bad : {"10.0.0.0/33", "fd00::/129", "10.0.0.0/x", "host:0", "host:65536",
                          "host:", "[::1", "[::1]x", "bad host", "::ffff:10.0.0.0/104", "/8", ""}) {
    const auto refused = OutboundPolicy::make({bad}, {});
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().code, "invalid_outbound");
  }
  EXPECT_FALSE(OutboundPolicy::make({}, {"10.0.0.0/8"}));
}

TEST(OutboundTest, NamesAreCheckedByWhatTheyVisiblyAreBeforeResolving) {
  const OutboundPolicy none;
  EXPECT_TRUE(none.check_name("hooks.example.com", 443));
  EXPECT_FALSE(none.check_name("127.0.0.1", 9000));
  EXPECT_FALSE(none.check_name("localhost", 9000));
  EXPECT_FALSE(none.check_name("api.LOCALHOST", 9000));
  EXPECT_FALSE(none.check_name("::1", 9000));
  EXPECT_TRUE(policy({"localhost"}).check_name("localhost", 9000));
  EXPECT_TRUE(policy({"127.0.0.0/8"}).check_name("127.0.0.1", 9000));
  // Resolved: every address is checked, the name's own loopback included.
  const auto resolved = none.resolve("localhost", 9000);
  ASSERT_FALSE(resolved);
  EXPECT_EQ(resolved.error().code, "outbound_refused");
  const auto allowed_loopback = policy({"127.0.0.1", "::1"}).resolve("127.0.0.1", 9000);
  ASSERT_TRUE(allowed_loopback) << allowed_loopback.error().message;
  EXPECT_EQ(allowed_loopback->front().address().to_string(), "127.0.0.1");
  EXPECT_EQ(allowed_loopback->front().port(), 9000);
  EXPECT_EQ(none.resolve("no-such-host.invalid", 80).error().code, "connection_failed");
}

TEST(OutboundTest, ReadsTheRegistryOfAnImageAsDockerDoes) {
  EXPECT_EQ(image_registry("ubuntu"), "docker.io");
  EXPECT_EQ(image_registry("ubuntu:22.04"), "docker.io");
  EXPECT_EQ(image_registry("pytorch/pytorch:2.5.1"), "docker.io");
  EXPECT_EQ(image_registry("index.docker.io/library/ubuntu"), "docker.io");
  EXPECT_EQ(image_registry("ghcr.io/acme/env:3"), "ghcr.io");
  EXPECT_EQ(image_registry("Registry.Internal:5000/team/x@sha256:abc"), "registry.internal:5000");
  EXPECT_EQ(image_registry("localhost/x"), "localhost");
  EXPECT_EQ(image_registry("localhost:5000/x"), "localhost:5000");
  EXPECT_EQ(image_registry("10.0.0.5:5000/x"), "10.0.0.5:5000");
  EXPECT_EQ(image_registry("Acme/x"), "acme");  // upper case: a host, as Docker reads it
}

TEST(OutboundTest, ImagesComeFromPublicRegistriesOrTheOperatorsList) {
  const OutboundPolicy none;
  EXPECT_TRUE(none.check_image("pytorch/pytorch:2.5.1"));
  EXPECT_TRUE(none.check_image("ghcr.io/acme/env:3"));
  for (const char* inside : {"127.0.0.1:5000/x", "localhost:5000/x", "10.0.0.5/x",
                             "169.254.169.254/latest/meta-data", "registry.localhost/x"}) {
    const auto refused = none.check_image(inside);
    ASSERT_FALSE(refused) << inside;
    EXPECT_EQ(refused.error().code, "image_registry_not_allowed");
    EXPECT_EQ(refused.error().kind, ErrorKind::kUnprocessable);
  }
  EXPECT_TRUE(policy({"10.0.0.5"}).check_image("10.0.0.5:5000/x"));
  EXPECT_TRUE(policy({"localhost:5000"}).check_image("localhost:5000/x"));
  EXPECT_FALSE(policy({"localhost:5000"}).check_image("localhost:5001/x"));

  const OutboundPolicy listed = policy({}, {"docker.io", "registry.internal:5000", "ghcr.io"});
  EXPECT_TRUE(listed.check_image("ubuntu:22.04"));
  EXPECT_TRUE(listed.check_image("registry.internal:5000/team/x:1"));
  EXPECT_TRUE(listed.check_image("GHCR.io/acme/x"));
  EXPECT_FALSE(listed.check_image("registry.internal/team/x:1"));  // another port
  const auto refused = listed.check_image("quay.io/acme/x:1");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "image_registry_not_allowed");
  EXPECT_NE(refused.error().message.find("quay.io"), std::string::npos);
  EXPECT_NE(refused.error().message.find("registry.internal:5000"), std::string::npos);
  // Listed explicitly, a private registry needs nothing more.
  EXPECT_TRUE(policy({}, {"10.0.0.5:5000"}).check_image("10.0.0.5:5000/x"));
  EXPECT_FALSE(policy({}, {"ghcr.io"}).check_image("ubuntu"));
}

}  // namespace
}  // namespace gpurent::server
