#include "server/console.h"

#include <gtest/gtest.h>

#include "common/random.h"
#include "server/test_util.h"

namespace gpurent::server {
namespace {

std::string header(const net::Response& response, std::string_view name) {
  for (const auto& [key, value] : response.headers) {
    if (key == name) return value;
  }
  return {};
}

TEST(ConsoleAssets, ThePageItsScriptsAndUPlotAreEmbeddedWithTheirTypes) {
  const auto* page = find_console_asset("index.html");
  ASSERT_NE(page, nullptr);
  EXPECT_EQ(page->content_type, "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("/console/app.js"), std::string_view::npos);
  ASSERT_NE(find_console_asset("app.js"), nullptr);
  EXPECT_EQ(find_console_asset("app.js")->content_type, "text/javascript; charset=utf-8");
  ASSERT_NE(find_console_asset("uPlot.iife.min.js"), nullptr);
  EXPECT_EQ(find_console_asset("app.css")->content_type, "text/css; charset=utf-8");
  EXPECT_EQ(find_console_asset("nothing.js"), nullptr);
  EXPECT_EQ(find_console_asset("../app.js"), nullptr);
  // Names in order, as the span promises; ETags quoted and distinct.
  const auto assets = console_assets();
  for (size_t i = 1; i < assets.size(); ++i) {
    EXPECT_LT(assets[i - 1].name, assets[i].name);
    EXPECT_NE(assets[i - 1].etag, assets[i].etag);
  }
}

TEST(ConsoleAssets, AFileIsGzippedWhenAcceptedAndNotResentWhileUnchanged) {
  const auto& page = *find_console_asset("index.html");
  net::Request request;
  const auto plain = console_asset_response(page, request);
  EXPECT_EQ(plain.status, 200);
  EXPECT_EQ(plain.body, page.body);
  EXPECT_EQ(header(plain, "Content-Encoding"), "");
  EXPECT_EQ(header(plain, "ETag"), page.etag);

  request.accept_encoding = "gzip, deflate, br";
  const auto gzipped = console_asset_response(page, request);
  EXPECT_EQ(gzipped.body, page.gzipped);
  EXPECT_EQ(header(gzipped, "Content-Encoding"), "gzip");
  EXPECT_LT(page.gzipped.size(), page.body.size());
  EXPECT_EQ(page.gzipped.substr(0, 2), std::string_view("\x1f\x8b", 2));

  request.if_none_match = std::string(page.etag);
  const auto unchanged = console_asset_response(page, request);
  EXPECT_EQ(unchanged.status, 304);
  EXPECT_TRUE(unchanged.body.empty());

  const std::string csp = header(plain, "Content-Security-Policy");
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(csp.find("unsafe"), std::string::npos);
  EXPECT_EQ(header(plain, "X-Frame-Options"), "DENY");
}

class ConsoleSessionsTest : public ::testing::Test {
 protected:
  ConsoleSessionsTest() {
    admin_ = testing::admin_and_node(controller_).admin;
    session_ = *controller_.accounts().credentials().create_session(
        admin_, hash_secret("gcs_secret"), "gcs_", std::chrono::hours(12));
  }

  static BrowserRequest request(std::string method) {
    BrowserRequest r;
    r.method = std::move(method);
    r.cookie = "other=1; gpurent_console=gcs_secret";
    r.host = "console.example:8080";
    return r;
  }

  ManualClock clock_{from_unix_ms(1'790'000'000'000)};
  controller::Controller controller_{clock_, {}};
  model::Principal admin_;
  model::ApiKey session_;
  ConsoleSessions sessions_{SessionSigner::random()};
};

TEST_F(ConsoleSessionsTest, ARequestWithoutTheCookieIsNotTheConsoles) {
  BrowserRequest r = request("GET");
  r.cookie = "other=1";
  EXPECT_FALSE(sessions_.authenticate(controller_, r));
}

TEST_F(ConsoleSessionsTest, TheCookieAuthenticatesReads) {
  const auto caller = sessions_.authenticate(controller_, request("GET"));
  ASSERT_TRUE(caller && *caller);
  EXPECT_EQ((*caller)->key_id, session_.id);
  EXPECT_EQ((*caller)->role, admin_.role);

  BrowserRequest unknown = request("GET");
  unknown.cookie = "gpurent_console=gcs_made_up";
  const auto refused = sessions_.authenticate(controller_, unknown);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->error().kind, ErrorKind::kUnauthenticated);
}

TEST_F(ConsoleSessionsTest, ChangesNeedTheSessionsCsrfTokenFromTheConsolesOrigin) {
  BrowserRequest change = request("POST");
  EXPECT_EQ(sessions_.authenticate(controller_, change)->error().code, "csrf_token_invalid");
  change.csrf_token = sessions_.csrf_token("k-another-session");
  EXPECT_EQ(sessions_.authenticate(controller_, change)->error().code, "csrf_token_invalid");
  // Another server's key makes another token for the same session.
  change.csrf_token = ConsoleSessions(SessionSigner::random()).csrf_token(session_.id);
  EXPECT_EQ(sessions_.authenticate(controller_, change)->error().code, "csrf_token_invalid");

  change.csrf_token = sessions_.csrf_token(session_.id);
  EXPECT_TRUE(*sessions_.authenticate(controller_, change));
  change.origin = "http://console.example:8080";
  EXPECT_TRUE(*sessions_.authenticate(controller_, change));
  change.origin = "https://evil.example";
  EXPECT_EQ(sessions_.authenticate(controller_, change)->error().code, "cross_origin");
}

TEST(ConsoleCookies, SecureBehindTlsAndAlwaysHttpOnlyAndStrict) {
  net::Request plain;
  EXPECT_EQ(ConsoleSessions::cookie("gcs_x", plain),
            "gpurent_console=gcs_x; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict");
  net::Request tls;
  tls.forwarded_proto = "https";
  EXPECT_EQ(ConsoleSessions::cookie("gcs_x", tls),
            "gpurent_console=gcs_x; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict; Secure");
  EXPECT_EQ(ConsoleSessions::removed_cookie(tls),
            "gpurent_console=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure");
}

}  // namespace
}  // namespace gpurent::server
