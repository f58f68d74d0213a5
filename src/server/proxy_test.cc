#include "server/proxy.h"

#include <gtest/gtest.h>

namespace gpurent::server {
namespace {

const Timestamp kNow = from_unix_ms(1'800'000'000'000);

TEST(SessionSignerTest, ATokenIsGoodForItsKindInstanceAndLifetimeOnly) {
  const SessionSigner signer = SessionSigner::random();
  const std::string ticket =
      signer.sign(TokenKind::kTicket, "i-abc", "t-alice", kNow + std::chrono::seconds(60));
  auto claims = signer.verify(ticket, TokenKind::kTicket, kNow);
  ASSERT_TRUE(claims) << claims.error().message;
  EXPECT_EQ(claims->instance_id, "i-abc");
  EXPECT_EQ(claims->tenant_id, "t-alice");

  // Expired, another kind.
  EXPECT_FALSE(signer.verify(ticket, TokenKind::kTicket, kNow + std::chrono::seconds(60)));
  const auto as_session = signer.verify(ticket, TokenKind::kSession, kNow);
  ASSERT_FALSE(as_session);
  EXPECT_EQ(as_session.error().kind, ErrorKind::kUnauthenticated);
  EXPECT_EQ(as_session.error().code, "invalid_session");

  // Any change to the signed text or the MAC breaks it.
  std::string tampered = ticket;
  tampered.replace(tampered.find("t-alice"), 7, "t-mallo");
  EXPECT_FALSE(signer.verify(tampered, TokenKind::kTicket, kNow));
  tampered = ticket;
  tampered.replace(tampered.find("i-abc"), 5, "i-xyz");
  EXPECT_FALSE(signer.verify(tampered, TokenKind::kTicket, kNow));
  std::string later = ticket;
  later[later.rfind('.') - 1] = later[later.rfind('.') - 1] == '9' ? '8' : '9';  // the expiry
  EXPECT_FALSE(signer.verify(later, TokenKind::kTicket, kNow));
  std::string bad_mac = ticket;
  bad_mac.back() = bad_mac.back() == '0' ? '1' : '0';
  EXPECT_FALSE(signer.verify(bad_mac, TokenKind::kTicket, kNow));
  EXPECT_FALSE(signer.verify("", TokenKind::kTicket, kNow));
  EXPECT_FALSE(signer.verify("no-dots", TokenKind::kTicket, kNow));

  // Another server's key.
  EXPECT_FALSE(SessionSigner::random().verify(ticket, TokenKind::kTicket, kNow));
}

TEST(SessionSignerTest, TheKeyFileKeepsSessionsAcrossRestarts) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gpurent-session-" + std::to_string(::getpid()) + ".key");
  std::filesystem::remove(path);
  auto first = SessionSigner::load_or_create(path.string());
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const std::string token = first->sign(TokenKind::kSession, "i-a", "t-a", kNow + kSessionLifetime);
  auto again = SessionSigner::load_or_create(path.string());
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->verify(token, TokenKind::kSession, kNow));
  // A damaged key file is an error, not a silent new key.
  std::filesystem::resize_file(path, 5);
  EXPECT_FALSE(SessionSigner::load_or_create(path.string()));
  std::filesystem::remove(path);
}

TEST(SessionSignerTest, AKeyWrittenInHexSignsForAnotherServer) {
  const SessionSigner first = SessionSigner::random();
  const std::string token = first.sign(TokenKind::kTicket, "i-a", "t-a", kNow + kSessionLifetime);
  auto other = SessionSigner::from_hex(first.key_hex());
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_TRUE(other->verify(token, TokenKind::kTicket, kNow));
  EXPECT_FALSE(SessionSigner::from_hex("not hex"));
  EXPECT_FALSE(SessionSigner::from_hex(first.key_hex().substr(2)));
}

TEST(ProxyHeadersTest, Cookies) {
  const std::string header = "a=1; gpurent_session=s.x.y; _xsrf=2|abc";
  EXPECT_EQ(cookie_value(header, "gpurent_session"), "s.x.y");
  EXPECT_EQ(cookie_value(header, "_xsrf"), "2|abc");
  EXPECT_EQ(cookie_value(header, "missing"), std::nullopt);
  EXPECT_EQ(cookie_value("gpurent_sessionx=1", "gpurent_session"), std::nullopt);
  EXPECT_EQ(without_cookie(header, "gpurent_session"), "a=1; _xsrf=2|abc");
  EXPECT_EQ(without_cookie("gpurent_session=1", "gpurent_session"), "");
  EXPECT_EQ(without_cookie("a=1;b=2", "gpurent_session"), "a=1; b=2");
}

TEST(ProxyHeadersTest, OriginAndLoginParameter) {
  EXPECT_TRUE(origin_matches_host("http://gpu.example:8080", "gpu.example:8080"));
  EXPECT_TRUE(origin_matches_host("https://gpu.example", "gpu.example"));
  EXPECT_FALSE(origin_matches_host("http://evil.example", "gpu.example"));
  EXPECT_FALSE(origin_matches_host("http://gpu.example:8081", "gpu.example:8080"));
  EXPECT_FALSE(origin_matches_host("null", "gpu.example"));
  EXPECT_FALSE(origin_matches_host("http://", ""));

  EXPECT_EQ(without_login_parameter("/i/a/jupyter/?login=t.x"), "/i/a/jupyter/");
  EXPECT_EQ(without_login_parameter("/i/a/jupyter/tree?a=1&login=t.x&b=2"),
            "/i/a/jupyter/tree?a=1&b=2");
  EXPECT_EQ(without_login_parameter("/i/a/jupyter/?loginx=1"), "/i/a/jupyter/?loginx=1");
  EXPECT_EQ(without_login_parameter("/i/a/jupyter/"), "/i/a/jupyter/");
}

TEST(ProxyHeadersTest, NodeEndpoints) {
  auto v4 = parse_node_endpoint("10.0.0.7:41234", "secret");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->host, "10.0.0.7");
  EXPECT_EQ(v4->port, 41234);
  auto v6 = parse_node_endpoint("[fd00::7]:80", "secret");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "fd00::7");
  EXPECT_EQ(parse_node_endpoint("node-7.cluster:9", "s")->host, "node-7.cluster");
  for (const char* bad : {"", "10.0.0.7", "10.0.0.7:", "10.0.0.7:0", "10.0.0.7:65536", ":80",
                          "[fd00::7:80", "10.0.0.7:8x"}) {
    EXPECT_FALSE(parse_node_endpoint(bad, "secret")) << bad;
  }
  EXPECT_FALSE(parse_node_endpoint("10.0.0.7:80", ""));
}

TEST(ProxyHeadersTest, ClaimsServicePathsAndExecOnly) {
  EXPECT_TRUE(TenantProxy::claims("GET", "/i/i-a/jupyter/"));
  EXPECT_TRUE(TenantProxy::claims("DELETE", "/i/anything"));
  EXPECT_TRUE(TenantProxy::claims("POST", "/v1/instances/i-a/exec"));
  EXPECT_FALSE(TenantProxy::claims("GET", "/v1/instances/i-a/exec"));
  EXPECT_FALSE(TenantProxy::claims("POST", "/v1/instances/i-a/b/exec"));
  EXPECT_FALSE(TenantProxy::claims("POST", "/v1/instances//exec"));
  EXPECT_FALSE(TenantProxy::claims("GET", "/v1/instances/i-a"));
}

}  // namespace
}  // namespace gpurent::server
