// https:// through HttpClient against a real TLS server: an OpenSSL server on a loopback port with
// a certificate made for the test, so that trust (ca_file, the system store) and host-name checks
// are exercised end to end.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "client/http_client.h"
#include "net/test_certificates.h"

namespace gpurent::client {
namespace {

using std::chrono::seconds;

using net::testing::make_certificate;
using net::testing::OpenSslDeleter;
using net::testing::TestCertificate;
using ContextPtr = std::unique_ptr<SSL_CTX, OpenSslDeleter<SSL_CTX, SSL_CTX_free>>;
using SslPtr = std::unique_ptr<SSL, OpenSslDeleter<SSL, SSL_free>>;

// Accepts one connection on 127.0.0.1, completes the TLS handshake if the client does, reads one
// request head and answers "200 ok". A client that rejects the certificate ends it early.
class OneShotTlsServer {
 public:
  explicit OneShotTlsServer(const TestCertificate& certificate)
      : context_(SSL_CTX_new(TLS_server_method())) {
    SSL_CTX_use_certificate(context_.get(), certificate.cert.get());
    SSL_CTX_use_PrivateKey(context_.get(), certificate.key.get());
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), length), 0);
    EXPECT_EQ(::listen(listener_, 1), 0);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~OneShotTlsServer() {
    ::shutdown(listener_, SHUT_RDWR);  // wakes accept() when no client came
    thread_.join();
    ::close(listener_);
  }

  int port() const { return port_; }
  // What the server read of the request (after a successful handshake).
  const std::string& request() const { return request_; }

 private:
  void serve() {
    const int fd = ::accept(listener_, nullptr, nullptr);
    if (fd < 0) return;
    SslPtr ssl(SSL_new(context_.get()));
    SSL_set_fd(ssl.get(), fd);
    if (SSL_accept(ssl.get()) == 1) {
      char buffer[4096];
      while (request_.find("\r\n\r\n") == std::string::npos) {
        const int n = SSL_read(ssl.get(), buffer, sizeof buffer);
        if (n <= 0) break;
        request_.append(buffer, static_cast<size_t>(n));
      }
      const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
      SSL_write(ssl.get(), answer.data(), static_cast<int>(answer.size()));
      SSL_shutdown(ssl.get());
    }
    ::close(fd);
  }

  ContextPtr context_;
  int listener_ = -1;
  int port_ = 0;
  std::string request_;
  std::thread thread_;
};

std::string write_ca_file(const TestCertificate& certificate, const std::string& tag) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gpurent-ca-" + tag + "-" + std::to_string(getpid()));
  std::ofstream(path) << certificate.cert_pem;
  return path.string();
}

TEST(HttpClientTlsTest, SpeaksHttpsToAServerItTrusts) {
  const TestCertificate certificate = make_certificate({.alt_names = "DNS:localhost,IP:127.0.0.1"});
  const std::string ca_file = write_ca_file(certificate, "trusted");
  for (const std::string host : {"localhost", "127.0.0.1"}) {
    OneShotTlsServer server(certificate);
    const std::string url = "https://" + host + ":" + std::to_string(server.port());
    auto client = HttpClient::create(url, {.ca_file = ca_file});
    ASSERT_TRUE(client.has_value()) << client.error().message;
    EXPECT_EQ(client->base_url(), url);
    auto response = client->send({.method = "POST", .target = "/hook", .body = "{}"}, seconds(10));
    ASSERT_TRUE(response.has_value()) << host << ": " << response.error().message;
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "ok");
    EXPECT_TRUE(server.request().starts_with("POST /hook HTTP/1.1\r\n")) << server.request();
  }
  std::filesystem::remove(ca_file);
}

TEST(HttpClientTlsTest, RefusesACertificateNoTrustedRootVouchesFor) {
  const TestCertificate certificate = make_certificate({.alt_names = "DNS:localhost"});
  OneShotTlsServer server(certificate);
  // The system's store does not know the test's self-signed certificate.
  auto client = HttpClient::create("https://localhost:" + std::to_string(server.port()));
  ASSERT_TRUE(client.has_value()) << client.error().message;
  auto response = client->send({.target = "/"}, seconds(10));
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, "connection_failed");
  EXPECT_NE(response.error().message.find("certificate verify failed"), std::string::npos)
      << response.error().message;
  EXPECT_EQ(server.request(), "");
}

TEST(HttpClientTlsTest, RefusesACertificateForAnotherHost) {
  const TestCertificate certificate = make_certificate({.alt_names = "DNS:other.example"});
  const std::string ca_file = write_ca_file(certificate, "other");
  OneShotTlsServer server(certificate);
  auto client = HttpClient::create("https://localhost:" + std::to_string(server.port()),
                                   {.ca_file = ca_file});
  ASSERT_TRUE(client.has_value()) << client.error().message;
  auto response = client->send({.target = "/"}, seconds(10));
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, "connection_failed");
  EXPECT_EQ(server.request(), "");
  std::filesystem::remove(ca_file);
}

TEST(HttpClientTlsTest, ConnectsToAPinnedAddressAndChecksTheUrlsHost) {
  // A name no resolver knows: the client connects to the address it was given, and the server
  // must still prove it is the URL's host.
  const TestCertificate certificate = make_certificate({.alt_names = "DNS:hooks.invalid"});
  const std::string ca_file = write_ca_file(certificate, "pinned");
  {
    OneShotTlsServer server(certificate);
    auto client = HttpClient::create("https://hooks.invalid:" + std::to_string(server.port()),
                                     {.ca_file = ca_file});
    ASSERT_TRUE(client.has_value()) << client.error().message;
    ASSERT_TRUE(client->connect_to("127.0.0.1"));
    auto response = client->send({.target = "/hook"}, seconds(10));
    ASSERT_TRUE(response.has_value()) << response.error().message;
    EXPECT_EQ(response->body, "ok");
    EXPECT_NE(server.request().find("Host: hooks.invalid:"), std::string::npos) << server.request();
  }
  {
    // The same address under a name the certificate does not hold is refused.
    OneShotTlsServer server(certificate);
    auto client = HttpClient::create("https://other.invalid:" + std::to_string(server.port()),
                                     {.ca_file = ca_file});
    ASSERT_TRUE(client.has_value());
    ASSERT_TRUE(client->connect_to("127.0.0.1"));
    auto response = client->send({.target = "/hook"}, seconds(10));
    ASSERT_FALSE(response.has_value());
    EXPECT_EQ(response.error().code, "connection_failed");
    EXPECT_EQ(server.request(), "");
    EXPECT_EQ(client->connect_to("not an address").error().code, "invalid_address");
  }
  std::filesystem::remove(ca_file);
}

TEST(HttpClientTlsTest, NamesAnUnreadableCaFile) {
  auto client = HttpClient::create("https://localhost:1", {.ca_file = "/nonexistent/ca.pem"});
  ASSERT_FALSE(client.has_value());
  EXPECT_EQ(client.error().code, "invalid_ca_file");
  EXPECT_NE(client.error().message.find("/nonexistent/ca.pem"), std::string::npos);
  auto no_key = HttpClient::create("https://localhost:1", {.cert_file = "/nonexistent/node.pem",
                                                           .key_file = "/nonexistent/key"});
  ASSERT_FALSE(no_key.has_value());
  EXPECT_EQ(no_key.error().code, "invalid_client_certificate");
  // Plain http ignores TLS options altogether.
  EXPECT_TRUE(HttpClient::create("http://localhost:1", {.ca_file = "/nonexistent/ca.pem"}));
}

}  // namespace
}  // namespace gpurent::client
