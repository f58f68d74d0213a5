// HttpServer over TLS on loopback, driven through the real HTTP client: trust, the client
// certificates of mutual TLS, and a certificate swapped while the server runs.
#include "net/tls.h"

#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <thread>

#include "client/http_client.h"
#include "common/json.h"
#include "net/http.h"
#include "net/test_certificates.h"

namespace gpurent::net {
namespace {

using std::chrono::seconds;
using testing::make_certificate;
using testing::TempFiles;
using testing::TestCertificate;

// A server that answers every request with what its connection told it: whether it was TLS and
// the client certificate's name.
class TlsServerTest : public ::testing::Test {
 protected:
  TlsServerTest()
      : ca_(make_certificate({.common_name = "gpurent test CA", .is_ca = true})),
        server_cert_(make_certificate(
            {.common_name = "api", .alt_names = "DNS:localhost,IP:127.0.0.1", .issuer = &ca_})),
        files_("tls-test") {
    ca_file_ = files_.write("ca.pem", ca_.cert_pem);
    cert_file_ = files_.write("server.pem", server_cert_.cert_pem);
    key_file_ = files_.write("server.key", server_cert_.key_pem);
  }

  void start(const TlsFiles& files) {
    server_ = std::make_unique<HttpServer>(io_, [](Request request) -> asio::awaitable<Response> {
      const Json seen = {{"tls", request.tls}, {"client", request.client_certificate}};
      co_return Response{200, "application/json", seen.dump(), {}, {}};
    });
    auto context = TlsContext::load(files);
    ASSERT_TRUE(context.has_value()) << context.error().message;
    server_->set_tls(*context);
    auto port = server_->listen("127.0.0.1", 0);
    ASSERT_TRUE(port.has_value());
    port_ = *port;
    thread_ = std::thread([this] { io_.run(); });
  }

  void TearDown() override {
    if (!server_) return;
    asio::post(io_, [this] { server_->close(); });
    io_.stop();
    thread_.join();
  }

  Result<Json> ask(const client::TlsOptions& tls, const std::string& scheme = "https") {
    GPURENT_TRY(client,
                client::HttpClient::create(scheme + "://localhost:" + std::to_string(port_), tls));
    GPURENT_TRY(response, client.send({.target = "/"}, seconds(10)));
    return Json::parse(response.body);
  }

  TlsFiles server_files(bool ask_client_certificates) const {
    return {.cert_file = cert_file_,
            .key_file = key_file_,
            .client_ca_file = ask_client_certificates ? ca_file_ : ""};
  }

  TestCertificate ca_;
  TestCertificate server_cert_;
  TempFiles files_;
  std::string ca_file_, cert_file_, key_file_;
  asio::io_context io_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  uint16_t port_ = 0;
};

TEST_F(TlsServerTest, ServesHttpsToAClientThatTrustsItsCertificate) {
  start(server_files(false));
  auto seen = ask({.ca_file = ca_file_});
  ASSERT_TRUE(seen.has_value()) << seen.error().message;
  EXPECT_EQ(seen->at("tls"), true);
  EXPECT_EQ(seen->at("client"), "");

  // A client that trusts only its system's store refuses the test CA's certificate.
  auto untrusted = ask({});
  ASSERT_FALSE(untrusted.has_value());
  EXPECT_EQ(untrusted.error().code, "connection_failed");
  // Plain HTTP to the TLS port gets no answer.
  auto plain = ask({}, "http");
  EXPECT_FALSE(plain.has_value());
}

TEST_F(TlsServerTest, NamesTheVerifiedClientCertificateUnderMutualTls) {
  start(server_files(true));
  const TestCertificate agent = make_certificate({.common_name = "node-7", .issuer = &ca_});
  const std::string agent_cert = files_.write("agent.pem", agent.cert_pem);
  const std::string agent_key = files_.write("agent.key", agent.key_pem);
  auto seen = ask({.ca_file = ca_file_, .cert_file = agent_cert, .key_file = agent_key});
  ASSERT_TRUE(seen.has_value()) << seen.error().message;
  EXPECT_EQ(seen->at("client"), "node-7");

  // No certificate: served (a browser, the CLI), with none named; whether a route needs one is
  // the server's decision.
  auto anonymous = ask({.ca_file = ca_file_});
  ASSERT_TRUE(anonymous.has_value()) << anonymous.error().message;
  EXPECT_EQ(anonymous->at("client"), "");

  // A certificate the client CA did not sign ends the handshake.
  const TestCertificate stranger = make_certificate({.common_name = "node-7"});
  auto forged = ask({.ca_file = ca_file_,
                     .cert_file = files_.write("stranger.pem", stranger.cert_pem),
                     .key_file = files_.write("stranger.key", stranger.key_pem)});
  ASSERT_FALSE(forged.has_value());
  EXPECT_EQ(forged.error().code, "connection_failed");
}

TEST_F(TlsServerTest, NewConnectionsTakeAReloadedCertificate) {
  start(server_files(false));
  // A renewal from another CA: clients that trust only the new CA are refused until the swap.
  const TestCertificate new_ca = make_certificate({.common_name = "new CA", .is_ca = true});
  const TestCertificate renewed =
      make_certificate({.common_name = "api", .alt_names = "DNS:localhost", .issuer = &new_ca});
  const std::string new_ca_file = files_.write("new-ca.pem", new_ca.cert_pem);
  EXPECT_FALSE(ask({.ca_file = new_ca_file}).has_value());
  auto context = TlsContext::load({.cert_file = files_.write("renewed.pem", renewed.cert_pem),
                                   .key_file = files_.write("renewed.key", renewed.key_pem)});
  ASSERT_TRUE(context.has_value()) << context.error().message;
  asio::post(io_, [this, context = *context] { server_->set_tls(context); });
  auto seen = ask({.ca_file = new_ca_file});
  ASSERT_TRUE(seen.has_value()) << seen.error().message;
  EXPECT_EQ(seen->at("tls"), true);
  EXPECT_FALSE(ask({.ca_file = ca_file_}).has_value());
}

TEST_F(TlsServerTest, UnusableFilesAreNamed) {
  auto missing = TlsContext::load({.cert_file = "/nonexistent/server.pem", .key_file = key_file_});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, "invalid_tls_files");
  EXPECT_NE(missing.error().message.find("/nonexistent/server.pem"), std::string::npos);

  const TestCertificate other = make_certificate({.common_name = "other"});
  auto mismatched = TlsContext::load(
      {.cert_file = cert_file_, .key_file = files_.write("other.key", other.key_pem)});
  ASSERT_FALSE(mismatched.has_value());
  EXPECT_EQ(mismatched.error().code, "invalid_tls_files");

  auto no_ca = TlsContext::load({.cert_file = cert_file_,
                                 .key_file = key_file_,
                                 .client_ca_file = files_.write("empty.pem", "")});
  ASSERT_FALSE(no_ca.has_value());
  EXPECT_EQ(no_ca.error().code, "invalid_tls_files");

  auto loaded = TlsContext::load(server_files(true));
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  EXPECT_TRUE((*loaded)->asks_client_certificates());
  EXPECT_NE((*loaded)->description().find("CN=api"), std::string::npos) << (*loaded)->description();
}

}  // namespace
}  // namespace gpurent::net
