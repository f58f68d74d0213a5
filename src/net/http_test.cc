// The HTTP server on loopback: the bytes of its answers, and its forwarding half (a reverse
// proxy: two real servers, the front one forwarding to the other, driven through the real HTTP
// client).
#include "net/http.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include <cctype>
#include <optional>
#include <sstream>
#include <thread>

#include "client/http_client.h"
#include "common/json.h"

namespace gpurent::net {
namespace {

namespace beast_http = boost::beast::http;

// What Beast's serializer writes for the response as the server once built it.
std::string beast_bytes(const Response& response, unsigned version, bool keep_alive) {
  beast_http::response<beast_http::string_body> message{
      static_cast<beast_http::status>(response.status), version};
  message.set(beast_http::field::server, "gpurent");
  if (!response.content_type.empty()) {
    message.set(beast_http::field::content_type, response.content_type);
  }
  for (const auto& [name, value] : response.headers) message.set(name, value);
  message.keep_alive(keep_alive);
  message.body() = response.body;
  message.prepare_payload();
  std::ostringstream out;
  out << message;
  return out.str();
}

// Answers GET /<i> with kAnswers[i].
const std::vector<Response> kAnswers = {
    {200, "application/json", R"({"id":"x"})", {{"Location", "/v1/x"}, {"X-Extra", "1"}}, {}},
    {204, "", "", {}, {}},
    // A handler's header replaces an earlier one of the same name, whatever its case.
    {201,
     "application/json",
     "a,b\n",
     {{"content-type", "text/csv"}, {"X-A", "1"}, {"x-a", "2"}},
     {}},
    {404, "application/problem+json", R"({"code":"not_found"})", {}, {}},
};

class Answers : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<HttpServer>(io_, [](Request request) -> asio::awaitable<Response> {
      co_return kAnswers.at(std::stoul(request.path.substr(1)));
    });
    auto port = server_->listen("127.0.0.1", 0);
    ASSERT_TRUE(port);
    socket_.connect({asio::ip::make_address("127.0.0.1"), *port});
    thread_ = std::thread([this] { io_.run(); });
  }

  void TearDown() override {
    asio::post(io_, [this] { server_->close(); });
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  // Sends the request and reads exactly `expected.size()` bytes of the answer.
  std::string exchange(const std::string& request, size_t expected) {
    asio::write(socket_, asio::buffer(request));
    std::string answer(expected, '\0');
    asio::read(socket_, asio::buffer(answer));
    return answer;
  }

  asio::io_context io_{1};
  std::unique_ptr<HttpServer> server_;
  asio::io_context client_io_;
  asio::ip::tcp::socket socket_{client_io_};
  std::thread thread_;
};

TEST_F(Answers, AreTheBytesBeastWouldWriteOnOneKeptAliveConnection) {
  for (size_t i = 0; i < kAnswers.size(); ++i) {
    const std::string expected = beast_bytes(kAnswers[i], 11, true);
    EXPECT_EQ(exchange(fmt::format("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", i), expected.size()),
              expected)
        << "answer " << i;
  }
  // HTTP/1.0 asking to keep the connection, then HTTP/1.1 asking to close it.
  std::string expected = beast_bytes(kAnswers[0], 10, true);
  EXPECT_EQ(exchange("GET /0 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", expected.size()),
            expected);
  EXPECT_NE(expected.find("Connection: keep-alive\r\n"), std::string::npos);
  expected = beast_bytes(kAnswers[2], 11, false);
  EXPECT_EQ(exchange("GET /2 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", expected.size()),
            expected);
  EXPECT_NE(expected.find("Connection: close\r\n"), std::string::npos);
  // Then the server closes: the next read ends.
  std::array<char, 1> more{};
  boost::system::error_code ec;
  asio::read(socket_, asio::buffer(more), ec);
  EXPECT_EQ(ec, asio::error::eof);
}

class Forwarding : public ::testing::Test {
 protected:
  void SetUp() override {
    upstream_ = std::make_unique<HttpServer>(
        io_,
        [](Request request) -> asio::awaitable<Response> {
          if (request.path == "/stream") {
            auto left = std::make_shared<int>(3);
            Response response{200, "text/plain", "first;", {}, {}};
            response.chunks = [left]() -> asio::awaitable<std::optional<std::string>> {
              if (*left == 0) co_return std::nullopt;
              co_return fmt::format("piece{};", (*left)--);
            };
            co_return response;
          }
          Json seen = {{"method", request.method},
                       {"path", request.path},
                       {"query", request.query},
                       {"authorization", request.authorization},
                       {"body_bytes", request.body.size()}};
          co_return Response{200, "application/json", seen.dump(), {}, {}};
        },
        HttpLimits{.max_body_bytes = 8 << 20});
    auto upstream_port = upstream_->listen("127.0.0.1", 0);
    ASSERT_TRUE(upstream_port);
    upstream_port_ = *upstream_port;

    Forwarder forwarder{
        .claims = [](std::string_view,
                     std::string_view path) { return path.starts_with("/up/") || path == "/raw"; },
        .decide = [this](RequestHead head) -> asio::awaitable<ForwardDecision> {
          if (head.header("x-refuse") == "yes") {
            co_return problem_response(Error{ErrorKind::kPermissionDenied, "refused", "no"});
          }
          if (head.path == "/raw") {
            co_return ForwardTo{.host = "127.0.0.1", .port = raw_port_, .raw = true};
          }
          const uint16_t port =
              head.path.starts_with("/up/nowhere") ? closed_port_ : upstream_port_;
          co_return ForwardTo{.host = "127.0.0.1",
                              .port = port,
                              .target = head.target.substr(3),  // drops "/up"
                              .remove_headers = {"X-Drop"},
                              .set_headers = {{"Authorization", "token injected"}}};
        }};
    // The front's own limit is tiny: forwarded bodies must stream past it.
    front_ = std::make_unique<HttpServer>(
        io_,
        [](Request) -> asio::awaitable<Response> {
          co_return Response{200, "text/plain", "front", {}, {}};
        },
        HttpLimits{.max_body_bytes = 1024}, std::move(forwarder));
    auto front_port = front_->listen("127.0.0.1", 0);
    ASSERT_TRUE(front_port);
    front_url_ = fmt::format("http://127.0.0.1:{}", *front_port);
    thread_ = std::thread([this] { io_.run(); });
  }

  void TearDown() override {
    asio::post(io_, [this] {
      front_->close();
      upstream_->close();
    });
    io_.stop();
    if (thread_.joinable()) thread_.join();
    if (raw_thread_.joinable()) raw_thread_.join();
  }

  client::HttpResponse send(const client::HttpRequest& request) {
    auto http = client::HttpClient::create(front_url_);
    EXPECT_TRUE(http);
    auto response = http->send(request, std::chrono::seconds(20));
    EXPECT_TRUE(response) << response.error().message;
    return response ? *response : client::HttpResponse{};
  }

  // A server that speaks first and no HTTP (as sshd does): "hello\n", then for the line it is
  // sent, that line upper-cased; then it closes.
  void serve_raw_once() {
    raw_listener_.emplace(io_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    raw_port_ = raw_listener_->local_endpoint().port();
    raw_thread_ = std::thread([this] {
      asio::io_context own;
      asio::ip::tcp::socket peer(own);
      boost::system::error_code ec;
      raw_listener_->accept(peer, ec);
      if (ec) return;
      asio::write(peer, asio::buffer(std::string_view("hello\n")), ec);
      std::string line;
      char c = 0;
      while (!ec && asio::read(peer, asio::buffer(&c, 1), ec) == 1 && c != '\n') {
        line += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      }
      asio::write(peer, asio::buffer(line + "\n"), ec);
    });
  }

  asio::io_context io_{1};
  std::unique_ptr<HttpServer> upstream_;
  std::unique_ptr<HttpServer> front_;
  std::optional<asio::ip::tcp::acceptor> raw_listener_;
  std::thread raw_thread_;
  uint16_t raw_port_ = 0;
  uint16_t upstream_port_ = 0;
  uint16_t closed_port_ = 1;  // nothing listens on port 1 on a test machine
  std::string front_url_;
  std::thread thread_;
};

TEST_F(Forwarding, ForwardsTargetQueryAndBodyWithTheHeadersChanged) {
  client::HttpRequest request{.method = "POST", .target = "/up/echo?a=1&b=x%20y"};
  request.body = std::string(3 << 20, 'z');  // far over the front's own 1 KiB limit
  request.headers = {{"Authorization", "Bearer tenant-key"}, {"X-Drop", "secret"}};
  const auto response = send(request);
  ASSERT_EQ(response.status, 200) << response.body;
  const Json seen = Json::parse(response.body);
  EXPECT_EQ(seen["method"], "POST");
  EXPECT_EQ(seen["path"], "/echo");
  EXPECT_EQ(seen["query"], (Json{{"a", "1"}, {"b", "x y"}}));
  EXPECT_EQ(seen["authorization"], "token injected");
  EXPECT_EQ(seen["body_bytes"], 3 << 20);
}

TEST_F(Forwarding, RelaysAChunkedAnswerAndKeepsTheConnectionForTheNextRequest) {
  auto http = client::HttpClient::create(front_url_);
  ASSERT_TRUE(http);
  for (int i = 0; i < 3; ++i) {
    auto streamed = http->send({.target = "/up/stream"}, std::chrono::seconds(20));
    ASSERT_TRUE(streamed) << streamed.error().message;
    EXPECT_EQ(streamed->status, 200);
    EXPECT_EQ(streamed->body, "first;piece3;piece2;piece1;");
    // A request the front answers itself, on the same connection.
    auto own = http->send({.target = "/own"}, std::chrono::seconds(20));
    ASSERT_TRUE(own);
    EXPECT_EQ(own->body, "front");
  }
}

TEST_F(Forwarding, AnswersForTheUpstreamThatCannotBeReached) {
  const auto response = send({.target = "/up/nowhere/x"});
  EXPECT_EQ(response.status, 502);
  const Json problem = Json::parse(response.body);
  EXPECT_EQ(problem["code"], "upstream_unavailable");
  EXPECT_EQ(problem["status"], 502);
}

TEST_F(Forwarding, ADecisionToRefuseIsTheAnswer) {
  client::HttpRequest request{.method = "POST", .target = "/up/echo", .body = "payload"};
  request.headers = {{"X-Refuse", "yes"}};
  const auto response = send(request);
  EXPECT_EQ(response.status, 403);
  EXPECT_NE(response.body.find("refused"), std::string::npos);
}

TEST_F(Forwarding, AnUpgradeToARawUpstreamIsAnsweredHereAndBecomesAByteTunnel) {
  serve_raw_once();
  int in[2];
  int out[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, in), 0);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, out), 0);
  ASSERT_EQ(::write(in[1], "shout\n", 6), 6);  // waits in the pair until the tunnel reads it
  auto http = client::HttpClient::create(front_url_);
  ASSERT_TRUE(http);
  const auto tunneled = http->tunnel({.target = "/raw", .headers = {{"Upgrade", "test"}}}, in[0],
                                     out[0], std::chrono::seconds(20));
  ASSERT_TRUE(tunneled) << tunneled.error().message;
  EXPECT_EQ(tunneled->status, 101);
  ::close(out[0]);
  std::string relayed;
  char piece[256];
  for (ssize_t n = 0; (n = ::read(out[1], piece, sizeof piece)) > 0;) relayed.append(piece, n);
  EXPECT_EQ(relayed, "hello\nSHOUT\n") << "the server's first words, then its answer";
  for (const int fd : {in[0], in[1], out[1]}) ::close(fd);

  // A request that is no upgrade gets no tunnel.
  const auto plain = send({.target = "/raw"});
  EXPECT_EQ(plain.status, 400);
  EXPECT_NE(plain.body.find("upgrade_required"), std::string::npos) << plain.body;
}

TEST_F(Forwarding, UnclaimedRequestsKeepTheFrontsBodyLimit) {
  const auto response = send({.method = "POST", .target = "/own", .body = std::string(4096, 'x')});
  EXPECT_EQ(response.status, 413);
}

}  // namespace
}  // namespace gpurent::net
