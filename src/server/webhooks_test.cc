#include "server/webhooks.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "client/test_http_server.h"

namespace gpurent::server {
namespace {

using client::test_support::TestHttpServer;

// Polls until the notifier has settled `count` deliveries either way (its own thread sends).
WebhookNotifier::Stats settled(const WebhookNotifier& notifier, uint64_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const auto stats = notifier.stats();
    if (stats.sent + stats.failed >= count || std::chrono::steady_clock::now() > deadline) {
      return stats;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<model::Event> one_event() {
  return {model::Event{.seq = 1, .kind = std::string(model::event_kind::kBalanceLow)}};
}

class WebhookDeliveryTest : public testing::Test {
 protected:
  TestHttpServer receiver_{[](const TestHttpServer::Request&, TestHttpServer::Connection& c) {
    c.write(TestHttpServer::response(204, "text/plain", ""));
  }};
};

TEST_F(WebhookDeliveryTest, ALoopbackReceiverIsRefusedByDefaultWithoutRetries) {
  WebhookNotifier notifier({{.url = receiver_.url() + "/hook"}}, OutboundPolicy());
  notifier.enqueue(one_event());
  const auto stats = settled(notifier, 1);
  EXPECT_EQ(stats.failed, 1u);  // at once: the 15 s of retries would outlast this wait
  EXPECT_EQ(stats.sent, 0u);
  EXPECT_EQ(receiver_.connections(), 0);
}

TEST_F(WebhookDeliveryTest, AnAllowedReceiverGetsTheDeliveryAtTheAddressChecked) {
  // By name: the delivery connects to the address "localhost" resolved to and was checked at,
  // and still names the webhook's host.
  auto allowed = OutboundPolicy::make({"localhost", "127.0.0.1"}, {});
  ASSERT_TRUE(allowed);
  WebhookNotifier notifier({{.url = fmt::format("http://localhost:{}/hook", receiver_.port())},
                            {.url = receiver_.url()}},
                           *allowed);
  notifier.enqueue(one_event());
  const auto stats = settled(notifier, 2);
  EXPECT_EQ(stats.sent, 2u);
  EXPECT_EQ(stats.failed, 0u);
  const auto requests = receiver_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].target, "/hook");
  EXPECT_EQ(requests[0].headers.at("host"), fmt::format("localhost:{}", receiver_.port()));
  EXPECT_NE(requests[0].body.find("balance.low"), std::string::npos);
  EXPECT_EQ(requests[1].target, "/");
  EXPECT_EQ(requests[1].headers.at("host"), fmt::format("127.0.0.1:{}", receiver_.port()));
}

}  // namespace
}  // namespace gpurent::server
