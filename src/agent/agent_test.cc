#include "agent/agent.h"

#include <gtest/gtest.h>

#include "agent/host.h"
#include "agent/server_link.h"
#include "agent/sim_fleet.h"

namespace gpurent::agent {
namespace {

TEST(ParseLabelTest, SplitsKeyAndValue) {
  using Label = std::pair<std::string, std::string>;
  EXPECT_EQ(*parse_label("zone=eu-west-1b"), (Label{"zone", "eu-west-1b"}));
  EXPECT_EQ(*parse_label("gpurent.io/edge=true"), (Label{"gpurent.io/edge", "true"}));
  EXPECT_EQ(*parse_label("rack=r1:u12"), (Label{"rack", "r1:u12"}));
  EXPECT_EQ(*parse_label("maintenance="), (Label{"maintenance", ""}));
}

TEST(ParseLabelTest, RefusesWhatWouldNotParseBack) {
  for (const char* bad :
       {"zone", "=b", "zone b=c", "zone=a,b", "zone=a b", "zone=a=b", "ZONE\n=b", "k:k=v"}) {
    const auto label = parse_label(bad);
    ASSERT_FALSE(label) << bad;
    EXPECT_EQ(label.error().code, "invalid_label") << bad;
  }
  EXPECT_FALSE(parse_label(std::string(64, 'k') + "=v"));
  EXPECT_TRUE(parse_label(std::string(63, 'k') + "=" + std::string(253, 'v')));
  EXPECT_FALSE(parse_label("k=" + std::string(254, 'v')));
}

TEST(AdvertiseAddressTest, AcceptsHostNamesAndIpAddressesOnly) {
  for (const char* good : {"10.0.0.7", "node-7.rack2.example", "fe80::1", "h"}) {
    EXPECT_TRUE(valid_advertise_address(good)) << good;
  }
  for (const char* bad : {"", "a b", "$(reboot)", "host;rm", "a/b", "x\n"}) {
    EXPECT_FALSE(valid_advertise_address(bad)) << bad;
  }
  EXPECT_FALSE(valid_advertise_address(std::string(254, 'a')));
}

TEST(AdvertiseAddressTest, TheLocalAddressTowardTheServerComesFromTheRoute) {
  EXPECT_EQ(local_address_toward("http://127.0.0.1:8080"), "127.0.0.1");
  EXPECT_EQ(local_address_toward("http://127.0.0.1:8080/v1"), "127.0.0.1");
  EXPECT_EQ(local_address_toward("127.0.0.1"), "127.0.0.1");  // no scheme, default port
  EXPECT_EQ(local_address_toward(""), "");
  EXPECT_EQ(local_address_toward("http://"), "");
  EXPECT_EQ(local_address_toward("http://[::1"), "");
  EXPECT_EQ(local_address_toward("http://127.0.0.1:"), "");
}

TEST(SimNodeNameTest, PadsTheIndexSoNamesSortInOrder) {
  EXPECT_EQ(sim_node_name("rack1", 0), "rack1-sim-0000");
  EXPECT_EQ(sim_node_name("rack1", 42), "rack1-sim-0042");
  EXPECT_EQ(sim_node_name("h", 12345), "h-sim-12345");
}

TEST(RetryDelayTest, DoublesUpToTheCapAndWaitsLongAfterARefusedCredential) {
  const Error unavailable{ErrorKind::kUnavailable, "timeout", "slow"};
  EXPECT_EQ(retry_delay(unavailable, 1), kMinBackoff);
  EXPECT_EQ(retry_delay(unavailable, 2), 2 * kMinBackoff);
  EXPECT_EQ(retry_delay(unavailable, 30), kMaxBackoff);
  EXPECT_EQ(retry_delay(unavailable, 0), kMinBackoff);
  EXPECT_EQ(retry_delay({ErrorKind::kUnauthenticated, "bad", "no"}, 1), kAuthRetry);
}

}  // namespace
}  // namespace gpurent::agent
