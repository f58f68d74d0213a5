#include "server/proxy.h"

#include <gtest/gtest.h>

#include "common/files.h"

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

TEST(SessionSignerTest, TheKeyFileKeepsSessionsAcrossRestartsSealed) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gpurent-session-" + std::to_string(::getpid()) + ".key");
  std::filesystem::remove(path);
  const SecretBox box(std::string(SecretBox::kKeyBytes, 'k'));
  auto first = SessionSigner::load_or_create(path.string(), box);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_TRUE(is_sealed(*read_file(path)));
  const std::string token = first->sign(TokenKind::kSession, "i-a", "t-a", kNow + kSessionLifetime);
  auto again = SessionSigner::load_or_create(path.string(), box);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->verify(token, TokenKind::kSession, kNow));

  // Under another key file: refused, saying how to recover, and the sealed key left as it was.
  const std::string sealed = *read_file(path);
  const auto wrong =
      SessionSigner::load_or_create(path.string(), SecretBox(std::string(32, 'o'), "other.key"));
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, "secret_unsealable");
  EXPECT_NE(wrong.error().message.find("other.key"), std::string::npos) << wrong.error().message;
  EXPECT_NE(wrong.error().message.find("or delete " + path.string()), std::string::npos);
  EXPECT_EQ(*read_file(path), sealed);

  // A damaged key file is an error, not a silent new key.
  ASSERT_TRUE(write_file_atomic(path, "sealed:v1:AAAA", 0600));
  EXPECT_FALSE(SessionSigner::load_or_create(path.string(), box));
  ASSERT_TRUE(write_file_atomic(path, "short", 0600));
  EXPECT_FALSE(SessionSigner::load_or_create(path.string(), box));
  std::filesystem::remove(path);
}

TEST(SessionSignerTest, AKeyFileWrittenBeforeSealingIsReadAndSealedInPlace) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gpurent-session-legacy-" + std::to_string(::getpid()) + ".key");
  const std::string key(32, 'L');
  ASSERT_TRUE(write_file_atomic(path, key, 0600));  // the raw key, as servers wrote it before
  const SessionSigner legacy(key);
  const std::string token = legacy.sign(TokenKind::kSession, "i-a", "t-a", kNow + kSessionLifetime);

  const SecretBox box(std::string(SecretBox::kKeyBytes, 'k'));
  auto migrated = SessionSigner::load_or_create(path.string(), box);
  ASSERT_TRUE(migrated) << migrated.error().message;
  EXPECT_TRUE(migrated->verify(token, TokenKind::kSession, kNow));  // browsers stay signed in
  const std::string stored = *read_file(path);
  EXPECT_TRUE(is_sealed(stored));
  EXPECT_EQ(stored.find(key), std::string::npos);
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto reread = SessionSigner::load_or_create(path.string(), box);
  ASSERT_TRUE(reread);
  EXPECT_TRUE(reread->verify(token, TokenKind::kSession, kNow));
  std::filesystem::remove(path);
}

TEST(SessionSignerTest, AStoredKeySignsForAnotherServerSealedOrInHexAsBefore) {
  const SecretBox box(std::string(SecretBox::kKeyBytes, 'k'));
  const SessionSigner first = SessionSigner::random();
  const std::string token = first.sign(TokenKind::kTicket, "i-a", "t-a", kNow + kSessionLifetime);
  auto other = SessionSigner::from_stored(first.sealed_key(box), box);
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_TRUE(other->verify(token, TokenKind::kTicket, kNow));

  const std::string hex(64, 'a');  // how servers sharing a store kept it before sealing
  auto from_hex = SessionSigner::from_stored(hex, box);
  ASSERT_TRUE(from_hex) << from_hex.error().message;
  EXPECT_EQ(from_hex->mac("x"), SessionSigner(std::string(32, '\xaa')).mac("x"));
  EXPECT_FALSE(SessionSigner::from_stored("not hex", box));
  EXPECT_FALSE(SessionSigner::from_stored(hex.substr(2), box));
  const auto wrong =
      SessionSigner::from_stored(first.sealed_key(SecretBox(std::string(32, 'o'))), box);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, "secret_unsealable");
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
