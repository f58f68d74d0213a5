#include "server/server_config.h"

#include "server/webhooks.h"

#include <gtest/gtest.h>

namespace gpurent::server {
namespace {

TEST(ServerConfig, ReadsRulesWebhooksAndTheMetricsToken) {
  auto config = parse_server_config(R"(
[metrics]
bearer_token = "s3cret"

[[alerts.rules]]
name = "hot_gpu"
metric = "DCGM_FI_DEV_GPU_TEMP"
comparison = ">"
threshold = 80
for_s = 30
severity = "critical"
scope = "gpu_type"
scope_value = "h100-80g"

[[alerts.rules]]
name = "gone"
metric = "gpu_util"
comparison = "absent"
for_s = 1.5

[[alerts.webhooks]]
url = "http://127.0.0.1:9000/hook"

[outbound]
allow = ["127.0.0.1"]
)",
                                    "test.toml");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->metrics_token, "s3cret");
  ASSERT_EQ(config->alert_rules.size(), 2u);
  EXPECT_EQ(config->alert_rules[0].signal.metric, monitor::Metric::kGpuTemp);
  EXPECT_EQ(config->alert_rules[0].for_ms, 30'000);
  EXPECT_EQ(config->alert_rules[0].scope.value, "h100-80g");
  EXPECT_EQ(config->alert_rules[1].comparison, monitor::Comparison::kAbsent);
  EXPECT_EQ(config->alert_rules[1].for_ms, 1'500);
  EXPECT_EQ(config->webhooks, std::vector<Webhook>{{.url = "http://127.0.0.1:9000/hook"}});
  EXPECT_TRUE(parse_server_config("", "empty.toml"));
}

TEST(ServerConfig, NamesASharedStoreAndHowOtherServersReachThisOne) {
  auto config = parse_server_config(R"(
[store]
url = "postgres://gpurent@db/gpurent"
advertise_url = "http://10.0.0.5:8080"
)",
                                    "test.toml");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->store_url, "postgres://gpurent@db/gpurent");
  EXPECT_EQ(config->advertise_url, "http://10.0.0.5:8080");
  EXPECT_EQ(parse_server_config("", "test.toml")->store_url, "");
  for (const char* bad : {"[store]\nurl = 5\n", "[store]\npath = \"x\"\n"}) {
    const auto refused = parse_server_config(bad, "test.toml");
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().code, "invalid_config");
  }
}

TEST(ServerConfig, NamesTheTlsFilesAndNeedsACertificateWithItsKey) {
  auto config = parse_server_config(R"(
[tls]
cert_file = "/etc/gpurent/server.pem"
key_file = "/etc/gpurent/server.key"
client_ca_file = "/etc/gpurent/agents-ca.pem"
)",
                                    "test.toml");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->tls, (net::TlsFiles{.cert_file = "/etc/gpurent/server.pem",
                                        .key_file = "/etc/gpurent/server.key",
                                        .client_ca_file = "/etc/gpurent/agents-ca.pem"}));
  EXPECT_EQ(parse_server_config("", "test.toml")->tls, net::TlsFiles{});
  for (const char* bad : {"[tls]\ncert_file = \"a.pem\"\n", "[tls]\nkey_file = \"a.key\"\n",
                          "[tls]\ncert_file = 5\nkey_file = \"k\"\n", "[tls]\ncert = \"a\"\n"}) {
    const auto refused = parse_server_config(bad, "test.toml");
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().code, "invalid_config");
  }
}

TEST(ServerConfig, TheClockSkewLimitIsTwoSecondsUnlessSet) {
  auto config = parse_server_config("", "test.toml");
  ASSERT_TRUE(config);
  EXPECT_EQ(config->clock_skew_limit, Millis(2'000));
  config = parse_server_config("[alerts]\nclock_skew_limit_s = 0.5\n", "test.toml");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->clock_skew_limit, Millis(500));
  for (const char* bad : {"0", "-1", "\"2\"", "100000"}) {
    const auto refused =
        parse_server_config(std::string("[alerts]\nclock_skew_limit_s = ") + bad, "test.toml");
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().code, "invalid_config");
  }
}

TEST(ServerConfig, WebhooksMayBeHttpsWithTheirOwnTrustedCertificates) {
  auto config = parse_server_config(R"(
[[alerts.webhooks]]
url = "https://alerts.example.com/gpurent"

[[alerts.webhooks]]
url = "https://127.0.0.1:8443"
ca_file = "/etc/ssl/certs/ca-certificates.crt"

[outbound]
allow = ["127.0.0.0/8"]
)",
                                    "tls.toml");
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->webhooks.size(), 2u);
  EXPECT_EQ(config->webhooks[0].ca_file, "");
  EXPECT_EQ(config->webhooks[1].url, "https://127.0.0.1:8443");
  const auto endpoint = webhook_client(config->webhooks[0]);
  ASSERT_TRUE(endpoint) << endpoint.error().message;
  EXPECT_EQ(endpoint->client.base_url(), "https://alerts.example.com");
  EXPECT_EQ(endpoint->path, "/gpurent");
  EXPECT_EQ(webhook_client(config->webhooks[1])->path, "/");
  // Events forwarded: the balance guard's unless the webhook lists its own.
  EXPECT_EQ(config->webhooks[0].events,
            (std::vector<std::string>{"balance.low", "instance.stopped_for_balance"}));

  // An unreadable CA file is refused at start, naming the webhook and the file.
  auto refused = parse_server_config(
      "[[alerts.webhooks]]\nurl = \"https://a.example\"\nca_file = \"/nonexistent.pem\"",
      "tls.toml");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "invalid_config");
  EXPECT_NE(refused.error().message.find("alerts.webhooks[0]"), std::string::npos);
  EXPECT_NE(refused.error().message.find("/nonexistent.pem"), std::string::npos);
}

TEST(ServerConfig, SecretsHaveAKeyFileInTheDataDirectoryUnlessSet) {
  EXPECT_EQ(parse_server_config("", "test.toml")->secrets_key_file, "");
  auto config = parse_server_config("[secrets]\nkey_file = \"/etc/gpurent/secrets.key\"\n", "t");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->secrets_key_file, "/etc/gpurent/secrets.key");
  for (const char* bad :
       {"[secrets]\nkey_file = 1", "[secrets]\nkey_file = \"\"", "[secrets]\nkey = \"x\""}) {
    const auto refused = parse_server_config(bad, "test.toml");
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().code, "invalid_config");
  }
}

TEST(ServerConfig, AWebhookToAnAddressInsideIsRefusedAtStartUnlessAllowed) {
  for (const char* url : {"http://127.0.0.1:9000/hook", "http://localhost:9000",
                          "https://169.254.169.254/latest", "http://[::1]:80", "http://10.0.0.7"}) {
    const auto refused =
        parse_server_config(fmt::format("[[alerts.webhooks]]\nurl = \"{}\"", url), "hooks.toml");
    ASSERT_FALSE(refused) << url;
    EXPECT_EQ(refused.error().code, "invalid_config");
    EXPECT_NE(refused.error().message.find("alerts.webhooks[0]"), std::string::npos);
    EXPECT_NE(refused.error().message.find("[outbound] allow"), std::string::npos)
        << refused.error().message;
  }
  // A name is resolved, and checked, at each delivery (webhooks_test).
  EXPECT_TRUE(parse_server_config("[[alerts.webhooks]]\nurl = \"http://hooks.internal/x\"", "t"));
  auto allowed = parse_server_config(R"(
[[alerts.webhooks]]
url = "http://localhost:9000"
[[alerts.webhooks]]
url = "http://10.0.0.7"
[outbound]
allow = ["localhost:9000", "10.0.0.0/8"]
registries = ["docker.io", "registry.internal:5000"]
)",
                                     "hooks.toml");
  ASSERT_TRUE(allowed) << allowed.error().message;
  EXPECT_TRUE(allowed->outbound.check_image("registry.internal:5000/x"));
  EXPECT_FALSE(allowed->outbound.check_image("ghcr.io/x"));
  for (const char* bad : {"[outbound]\nallow = \"10.0.0.0/8\"", "[outbound]\nallow = [1]",
                          "[outbound]\nallow = [\"10.0.0.0/99\"]",
                          "[outbound]\nregistries = [\"a b\"]", "[outbound]\ndeny = []"}) {
    const auto refused = parse_server_config(bad, "test.toml");
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().code, "invalid_config");
  }
}

TEST(ServerConfig, AWebhookListsTheEventKindsItWants) {
  const auto events = [](const std::string& list) {
    return parse_server_config("[[alerts.webhooks]]\nurl = \"http://h/x\"\nevents = " + list,
                               "events.toml");
  };
  auto config = events(R"(["node.down", "sla.credit"])");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->webhooks[0].events, (std::vector<std::string>{"node.down", "sla.credit"}));
  config = events("[]");  // alerts only
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_TRUE(config->webhooks[0].events.empty());
  for (const char* bad :
       {R"(["node.exploded"])", R"(["node.down", "node.down"])", "[1]", R"("balance.low")"}) {
    const auto refused = events(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().code, "invalid_config");
    EXPECT_NE(refused.error().message.find("balance.low"), std::string::npos)  // lists the kinds
        << refused.error().message;
  }
}

TEST(ServerConfig, RefusesWhatItDoesNotKnowWithTheRulesOwnCodes) {
  const auto code = [](const std::string& text) {
    auto config = parse_server_config(text, "bad.toml");
    return config ? std::string("ok") : config.error().code;
  };
  EXPECT_EQ(code("colour = 1"), "invalid_config");
  EXPECT_EQ(code("[alerts]\nrule = 1"), "invalid_config");
  EXPECT_EQ(code("[[alerts.rules]]\nname = \"x\"\nmetric = \"gpu_util\"\ncomparison = \">\"\n"
                 "threshold = 1\ncolour = \"red\""),
            "unknown_field");
  EXPECT_EQ(code("[[alerts.rules]]\nname = \"Bad Name\"\nmetric = \"gpu_util\"\n"
                 "comparison = \">\"\nthreshold = 1"),
            "invalid_rule_name");
  EXPECT_EQ(code("[[alerts.rules]]\nname = \"x\"\nmetric = \"gpu_util\"\ncomparison = \">\"\n"
                 "threshold = 1\nfor_s = -1"),
            "invalid_for");
  EXPECT_EQ(code("[[alerts.webhooks]]\nurl = \"ftp://example.com\""), "invalid_config");
  EXPECT_EQ(code("[[alerts.webhooks]]\nurl = \"unix:///run/hook.sock\""), "invalid_config");
  EXPECT_EQ(code("[[alerts.webhooks]]\nurl = \"https://example.com:0/hook\""), "invalid_config");
  EXPECT_EQ(code("[[alerts.webhooks]]\nurl = \"https://example.com\"\nca_file = 1"),
            "invalid_config");
  EXPECT_EQ(code("[metrics]\nbearer_token = 5"), "invalid_config");
  EXPECT_EQ(code("not toml ["), "invalid_config");
}

}  // namespace
}  // namespace gpurent::server
