#include "client/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>

#include "client/test_http_server.h"

namespace gpurent::client {
namespace {

using std::chrono::milliseconds;
using test_support::TestHttpServer;

constexpr auto kTestWait = std::chrono::seconds(10);

HttpClient make_client(const TestHttpServer& server) {
  auto client = HttpClient::create(server.url());
  EXPECT_TRUE(client.has_value());
  return std::move(*client);
}

TEST(HttpClientTest, ParsesBaseUrls) {
  auto plain = HttpClient::create("http://example.com:8080/");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->base_url(), "http://example.com:8080");
  auto bare = HttpClient::create("localhost:9");
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->base_url(), "http://localhost:9");
  auto v6 = HttpClient::create("http://[::1]:8080");
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->base_url(), "http://[::1]:8080");

  auto tls = HttpClient::create("HTTPS://example.com");
  ASSERT_TRUE(tls.has_value()) << tls.error().message;
  EXPECT_EQ(tls->base_url(), "https://example.com");

  auto unix_socket = HttpClient::create("unix:///run/podman/podman.sock");
  ASSERT_TRUE(unix_socket.has_value());
  EXPECT_EQ(unix_socket->base_url(), "unix:///run/podman/podman.sock");

  for (const char* bad :
       {"ftp://x", "https://h:0", "https://h/api", "http://:80", "http://h:0", "http://h:65536",
        "http://h:8080/api", "http://u@h", "::1", "unix://relative.sock", "unix://"}) {
    auto client = HttpClient::create(bad);
    ASSERT_FALSE(client.has_value()) << bad;
    EXPECT_EQ(client.error().code, "invalid_url") << bad;
  }
}

TEST(HttpClientTest, SpeaksHttpOverAUnixSocket) {
  const std::string path = fmt::format("/tmp/gpurent-http-{}.sock", ::getpid());
  ::unlink(path.c_str());
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  // One connection, two requests on it: the connection is kept alive as over TCP.
  auto server = std::async(std::launch::async, [listener] {
    const int fd = ::accept(listener, nullptr, nullptr);
    std::string seen;
    char buffer[4096];
    for (int answered = 0; answered < 2;) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) break;
      seen.append(buffer, static_cast<size_t>(n));
      for (size_t end; (end = seen.find("\r\n\r\n")) != std::string::npos; ++answered) {
        seen.erase(0, end + 4);
        const std::string_view reply =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        if (::write(fd, reply.data(), reply.size()) != static_cast<ssize_t>(reply.size())) break;
      }
    }
    ::close(fd);
  });
  auto client = HttpClient::create("unix://" + path);
  ASSERT_TRUE(client.has_value());
  for (int i = 0; i < 2; ++i) {
    auto response = client->send({.target = "/v1.41/version"}, std::chrono::seconds(10));
    ASSERT_TRUE(response.has_value()) << response.error().message;
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "{}");
  }
  EXPECT_EQ(server.wait_for(kTestWait), std::future_status::ready);
  ::close(listener);
  ::unlink(path.c_str());
  auto gone = client->send({.target = "/v1.41/version"}, std::chrono::seconds(1));
  ASSERT_FALSE(gone.has_value());
  EXPECT_EQ(gone.error().code, "connection_failed");
}

TEST(HttpClientTest, ReusesOneKeptAliveConnection) {
  TestHttpServer server([](const TestHttpServer::Request& request, auto& connection) {
    connection.write(TestHttpServer::response(200, "application/json", request.body));
  });
  HttpClient client = make_client(server);

  auto first = client.send({.method = "POST",
                            .target = "/v1/echo",
                            .body = R"({"a":1})",
                            .headers = {{"Authorization", "Bearer gpr_x"}}});
  ASSERT_TRUE(first.has_value()) << first.error().message;
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->content_type, "application/json");
  EXPECT_EQ(first->body, R"({"a":1})");
  auto second = client.send({.target = "/v1/echo"});
  ASSERT_TRUE(second.has_value()) << second.error().message;
  EXPECT_EQ(second->status, 200);

  EXPECT_EQ(server.connections(), 1);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].headers.at("authorization"), "Bearer gpr_x");
  EXPECT_EQ(requests[0].headers.at("content-type"), "application/json");
  EXPECT_EQ(requests[0].headers.at("host"), fmt::format("127.0.0.1:{}", server.port()));
  EXPECT_EQ(requests[1].method, "GET");
  EXPECT_EQ(requests[1].connection, requests[0].connection);
}

TEST(HttpClientTest, ErrorStatusesAreResponses) {
  TestHttpServer server([](const auto&, auto& connection) {
    connection.write(TestHttpServer::response(404, "application/problem+json", "{}"));
  });
  HttpClient client = make_client(server);
  auto response = client.send({.target = "/missing"});
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 404);
}

// A port nothing listens on: bound, then closed.
std::string closed_port_url() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return fmt::format("http://127.0.0.1:{}", ntohs(address.sin_port));
}

TEST(HttpClientTest, ARequestThatReachedNoApiGoesToTheNextServer) {
  // A standby with no leader, and one whose leader is gone (server/leader_router.h).
  TestHttpServer no_leader([](const auto&, auto& connection) {
    connection.write(TestHttpServer::response(503, "application/problem+json",
                                              R"({"code":"no_leader","status":503})"));
  });
  TestHttpServer gone_leader([](const auto&, auto& connection) {
    connection.write(TestHttpServer::response(502, "application/problem+json",
                                              R"({"code":"upstream_unavailable"})"));
  });
  TestHttpServer leader([](const auto&, auto& connection) {
    connection.write(TestHttpServer::response(201, "application/json", R"({"id":"i-1"})"));
  });
  auto client = HttpClient::create(fmt::format("{},{},{},{}", closed_port_url(), no_leader.url(),
                                               gone_leader.url(), leader.url()));
  ASSERT_TRUE(client) << client.error().message;
  auto created = client->send({.method = "POST", .target = "/v1/instances", .body = "{}"});
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_EQ(created->status, 201);
  EXPECT_EQ(client->base_url(), leader.url());  // and stays there
  ASSERT_TRUE(client->send({.target = "/v1/instances"}));
  EXPECT_EQ(leader.requests().size(), 2u);
  EXPECT_EQ(no_leader.requests().size(), 1u);
}

TEST(HttpClientTest, AnswersOfAnApiAreNeverSentElsewhere) {
  TestHttpServer failing([](const auto&, auto& connection) {
    connection.write(
        TestHttpServer::response(503, "application/problem+json", R"({"code":"draining"})"));
  });
  TestHttpServer other([](const auto&, auto& connection) {
    connection.write(TestHttpServer::response(200, "application/json", "{}"));
  });
  auto client = HttpClient::create(failing.url() + "," + other.url());
  ASSERT_TRUE(client);
  auto answer = client->send({.method = "POST", .target = "/v1/topups", .body = "{}"});
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 503);
  EXPECT_TRUE(other.requests().empty());
  // With no server reachable, the call ends at its timeout with the last failure.
  auto nowhere = HttpClient::create(closed_port_url() + "," + closed_port_url());
  ASSERT_TRUE(nowhere);
  const auto started = std::chrono::steady_clock::now();
  auto failed = nowhere->send({.target = "/healthz"}, milliseconds(700));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, "connection_failed");
  EXPECT_GE(std::chrono::steady_clock::now() - started, milliseconds(600));
  EXPECT_FALSE(HttpClient::create("http://a:1,"));  // an empty server is no URL
}

TEST(HttpClientTest, ReconnectsWhenTheServerClosedTheIdleConnection) {
  std::promise<void> closed;
  std::atomic<int> answered{0};
  TestHttpServer server([&](const auto&, auto& connection) {
    connection.write(TestHttpServer::response(200, "text/plain", "ok"));
    if (++answered == 1) {
      connection.close();  // an idle timeout on the server's side, without "Connection: close"
      closed.set_value();
    }
  });
  HttpClient client = make_client(server);
  ASSERT_TRUE(client.send({.target = "/a"}).has_value());
  ASSERT_EQ(closed.get_future().wait_for(kTestWait), std::future_status::ready);

  // Even a POST may go out: the closed connection was noticed before anything was written.
  auto second = client.send({.method = "POST", .target = "/b", .body = "{}"});
  ASSERT_TRUE(second.has_value()) << second.error().message;
  EXPECT_EQ(second->body, "ok");
  EXPECT_EQ(server.connections(), 2);
  EXPECT_EQ(server.requests().size(), 2u);
}

// The server reads a request on a kept-alive connection, then closes it without answering.
class ClosesSecondRequest {
 public:
  void operator()(const TestHttpServer::Request&, TestHttpServer::Connection& connection) {
    if (++seen_ == 2) {
      connection.close();
      return;
    }
    connection.write(TestHttpServer::response(200, "text/plain", "ok"));
  }

 private:
  std::atomic<int> seen_{0};
};

TEST(HttpClientTest, NeverResendsAPostTheServerMayHaveSeen) {
  ClosesSecondRequest script;
  TestHttpServer server(std::ref(script));
  HttpClient client = make_client(server);
  ASSERT_TRUE(client.send({.target = "/a"}).has_value());
  auto post = client.send({.method = "POST", .target = "/v1/instances", .body = "{}"});
  ASSERT_FALSE(post.has_value());
  EXPECT_EQ(post.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(post.error().code, "connection_failed");
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST(HttpClientTest, ResendsAGetTheServerClosedWithoutAnswering) {
  ClosesSecondRequest script;
  TestHttpServer server(std::ref(script));
  HttpClient client = make_client(server);
  ASSERT_TRUE(client.send({.target = "/a"}).has_value());
  auto get = client.send({.target = "/b"});
  ASSERT_TRUE(get.has_value()) << get.error().message;
  EXPECT_EQ(get->status, 200);
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(server.connections(), 2);
}

TEST(HttpClientTest, TimesOutWhenTheServerIsSilent) {
  TestHttpServer server([](const auto&, auto&) {});
  HttpClient client = make_client(server);
  const auto start = std::chrono::steady_clock::now();
  auto response = client.send({.target = "/slow"}, milliseconds(100));
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(response.error().code, "timeout");
  EXPECT_LT(std::chrono::steady_clock::now() - start, kTestWait);
}

TEST(HttpClientTest, ReportsARefusedConnectionNamingTheUrl) {
  // Bind a port and close it again: nothing listens there afterwards.
  std::string url;
  {
    TestHttpServer gone([](const auto&, auto&) {});
    url = gone.url();
  }
  auto client = HttpClient::create(url);
  ASSERT_TRUE(client.has_value());
  auto response = client->send({.target = "/v1/whoami"});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(response.error().code, "connection_failed");
  EXPECT_NE(response.error().message.find(url), std::string::npos) << response.error().message;
}

TEST(HttpClientTest, RefusesAnOversizedBody) {
  TestHttpServer server([](const auto&, auto& connection) {
    connection.write(
        fmt::format("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", kMaxResponseBodyBytes + 1));
  });
  HttpClient client = make_client(server);
  auto response = client.send({.target = "/huge"});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, "response_too_large");
}

TEST(HttpClientTest, RefusesHeaderInjection) {
  TestHttpServer server([](const auto&, auto&) {});
  HttpClient client = make_client(server);
  auto response = client.send({.target = "/", .headers = {{"Authorization", "x\r\nX-Evil: 1"}}});
  ASSERT_FALSE(response.has_value());
  EXPECT_EQ(response.error().code, "invalid_request");
  EXPECT_EQ(server.connections(), 0);
}

constexpr std::string_view kChunkedHeader =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n";

TEST(HttpClientTest, StreamsChunksAsTheyArrive) {
  std::promise<void> first_piece_seen;
  auto first_piece_future = first_piece_seen.get_future();
  std::atomic<bool> waited_in_vain{false};
  TestHttpServer server([&](const TestHttpServer::Request& request, auto& connection) {
    if (request.target != "/logs") {
      connection.write(TestHttpServer::response(200, "text/plain", "after"));
      return;
    }
    connection.write(kChunkedHeader);
    connection.write(TestHttpServer::chunk("hello "));
    // The rest is written only once the client has handed over the first piece.
    if (first_piece_future.wait_for(kTestWait) != std::future_status::ready) waited_in_vain = true;
    connection.write(TestHttpServer::chunk("world"));
    connection.write("0\r\n\r\n");
  });
  HttpClient client = make_client(server);

  std::string received;
  bool signalled = false;
  auto status = client.stream({.target = "/logs"}, [&](std::string_view piece) {
    received.append(piece);
    if (!signalled && received == "hello ") {
      signalled = true;
      first_piece_seen.set_value();
    }
    return true;
  });
  ASSERT_TRUE(status.has_value()) << status.error().message;
  EXPECT_EQ(status->status, 200);
  EXPECT_EQ(received, "hello world");
  EXPECT_FALSE(waited_in_vain);

  // A completed chunked body leaves the connection reusable.
  auto after = client.send({.target = "/after"});
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->body, "after");
  EXPECT_EQ(server.connections(), 1);
}

TEST(HttpClientTest, StreamStopsWhenTheCallbackSaysSo) {
  TestHttpServer server([](const TestHttpServer::Request& request, auto& connection) {
    if (request.target != "/logs") {
      connection.write(TestHttpServer::response(200, "text/plain", "after"));
      return;
    }
    connection.write(kChunkedHeader);
    connection.write(TestHttpServer::chunk("first"));
    // No terminating chunk: a followed log of a running instance never ends by itself.
  });
  HttpClient client = make_client(server);
  int pieces = 0;
  auto status = client.stream({.target = "/logs"}, [&](std::string_view) {
    ++pieces;
    return false;
  });
  ASSERT_TRUE(status.has_value()) << status.error().message;
  EXPECT_EQ(status->status, 200);
  EXPECT_EQ(pieces, 1);

  auto after = client.send({.target = "/after"});
  ASSERT_TRUE(after.has_value()) << after.error().message;
  EXPECT_EQ(server.connections(), 2);
}

TEST(HttpClientTest, StreamTimesOutWhenIdle) {
  TestHttpServer server([](const auto&, auto& connection) {
    connection.write(kChunkedHeader);
    connection.write(TestHttpServer::chunk("only"));
  });
  HttpClient client = make_client(server);
  std::string received;
  auto status = client.stream(
      {.target = "/logs"},
      [&](std::string_view piece) {
        received.append(piece);
        return true;
      },
      milliseconds(100));
  ASSERT_FALSE(status.has_value());
  EXPECT_EQ(status.error().code, "timeout");
  EXPECT_EQ(received, "only");
}

TEST(HttpClientTest, StreamReturnsAnErrorBodyWholeAndStreamsNothing) {
  const std::string problem = R"({"code":"instance_not_found","detail":"no such instance"})";
  TestHttpServer server([&](const auto&, auto& connection) {
    connection.write(TestHttpServer::response(404, "application/problem+json", problem));
  });
  HttpClient client = make_client(server);
  std::vector<std::string> pieces;
  auto status = client.stream({.target = "/logs"}, [&](std::string_view piece) {
    pieces.emplace_back(piece);
    return true;
  });
  ASSERT_TRUE(status.has_value()) << status.error().message;
  EXPECT_EQ(status->status, 404);
  EXPECT_EQ(status->body, problem);
  EXPECT_EQ(status->content_type, "application/problem+json");
  EXPECT_TRUE(pieces.empty());
}

}  // namespace
}  // namespace gpurent::client
