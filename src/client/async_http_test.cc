#include <utility>  // before Asio: Boost 1.74 with C++20 coroutines needs it

#include "client/async_http.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "client/test_http_server.h"

namespace gpurent::client {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using test_support::TestHttpServer;

constexpr auto kTestWait = std::chrono::seconds(10);

ResolvedServer resolved(const TestHttpServer& server, AsyncHttpOptions options = {}) {
  auto resolved = ResolvedServer::resolve(server.url(), std::move(options));
  EXPECT_TRUE(resolved) << resolved.error().message;
  return std::move(*resolved);
}

HttpRequest get(std::string target) { return {.method = "GET", .target = std::move(target)}; }

// Starts the call on io; its answer lands in *out once io has run.
void start(asio::io_context& io, asio::awaitable<Result<HttpResponse>> call,
           std::optional<Result<HttpResponse>>* out) {
  asio::co_spawn(io, std::move(call),
                 [out](const std::exception_ptr& error, Result<HttpResponse> got) {
                   ASSERT_FALSE(error);
                   *out = std::move(got);
                 });
}

// Runs one call to its end.
Result<HttpResponse> complete(asio::io_context& io, asio::awaitable<Result<HttpResponse>> call) {
  std::optional<Result<HttpResponse>> out;
  start(io, std::move(call), &out);
  io.restart();
  io.run();
  EXPECT_TRUE(out);
  return out ? std::move(*out) : fail(Error::internal("the call never ended"));
}

TEST(AsyncHttpTest, SendsTheRequestAndKeepsTheConnection) {
  TestHttpServer server([](const TestHttpServer::Request& request, auto& connection) {
    connection.write(
        TestHttpServer::response(201, "application/json", "{\"got\":" + request.body + "}"));
  });
  const auto target = resolved(server, {.user_agent = "test-agent"});
  asio::io_context io;
  AsyncHttpConnection connection(io, target);
  const HttpRequest post{.method = "POST",
                         .target = "/v1/things?x=1",
                         .body = "[1]",
                         .headers = {{"Authorization", "Bearer secret"}}};
  auto first = complete(io, connection.send(post, kTestWait));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->status, 201);
  EXPECT_EQ(first->content_type, "application/json");
  EXPECT_EQ(first->body, "{\"got\":[1]}");
  auto second = complete(io, connection.send(get("/v1/other"), kTestWait));
  ASSERT_TRUE(second) << second.error().message;

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/things?x=1");
  EXPECT_EQ(requests[0].body, "[1]");
  EXPECT_EQ(requests[0].headers.at("host"), server.url().substr(7));
  EXPECT_EQ(requests[0].headers.at("user-agent"), "test-agent");
  EXPECT_EQ(requests[0].headers.at("authorization"), "Bearer secret");
  EXPECT_EQ(requests[0].headers.at("content-type"), "application/json");
  EXPECT_EQ(requests[0].headers.at("content-length"), "3");
  EXPECT_FALSE(requests[1].headers.contains("content-length"));
  EXPECT_EQ(requests[1].connection, 1);  // kept alive
}

TEST(AsyncHttpTest, RefusesWhatItCannotSend) {
  for (const char* url : {"https://127.0.0.1:1", "unix:///tmp/x.sock", "ftp://x"}) {
    auto refused = ResolvedServer::resolve(url);
    ASSERT_FALSE(refused) << url;
    EXPECT_EQ(refused.error().code, "invalid_url");
  }
  TestHttpServer server([](const auto&, auto& connection) {
    connection.write(TestHttpServer::response(200, "text/plain", ""));
  });
  const auto target = resolved(server);
  asio::io_context io;
  AsyncHttpConnection connection(io, target);
  HttpRequest smuggling = get("/x");
  smuggling.headers = {{"X-Key", "a\r\nX-Admin: 1"}};
  auto refused = complete(io, connection.send(smuggling, kTestWait));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "invalid_request");
  EXPECT_TRUE(server.requests().empty());
}

// The server answers and then closes the connection: the next request finds it closed without an
// answer, and goes out again on a fresh one only when it may be repeated.
TEST(AsyncHttpTest, RepeatsOnAFreshConnectionOnlyWhatMayBeRepeated) {
  TestHttpServer server([](const auto&, auto& connection) {
    connection.write(TestHttpServer::response(200, "text/plain", "ok"));
    connection.close();
  });
  const HttpRequest post{.method = "POST", .target = "/report", .body = "{}"};
  {
    const auto target = resolved(server);
    asio::io_context io;
    AsyncHttpConnection connection(io, target);
    ASSERT_TRUE(complete(io, connection.send(post, kTestWait)));
    auto repeated = complete(io, connection.send(get("/state"), kTestWait));
    ASSERT_TRUE(repeated) << repeated.error().message;  // GET: sent again, and answered
    auto lost = complete(io, connection.send(post, kTestWait));
    ASSERT_FALSE(lost);
    EXPECT_EQ(lost.error().code, "connection_failed");
    const auto requests = server.requests();
    ASSERT_EQ(requests.size(), 2u);
    EXPECT_EQ(requests[1].target, "/state");
    EXPECT_EQ(requests[1].connection, 2);
  }
  const auto target = resolved(server, {.repeatable = true});
  asio::io_context io;
  AsyncHttpConnection connection(io, target);
  ASSERT_TRUE(complete(io, connection.send(post, kTestWait)));
  auto repeated = complete(io, connection.send(post, kTestWait));
  ASSERT_TRUE(repeated) << repeated.error().message;
  EXPECT_EQ(repeated->body, "ok");
}

TEST(AsyncHttpTest, StreamsChunksUntilTheCallerStops) {
  TestHttpServer server([](const TestHttpServer::Request& request, auto& connection) {
    if (request.target == "/missing") {
      connection.write(TestHttpServer::response(404, "application/problem+json", "{\"e\":1}"));
      return;
    }
    connection.write(
        "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
        "Transfer-Encoding: chunked\r\n\r\n");
    connection.write(TestHttpServer::chunk("one\n"));
    connection.write(TestHttpServer::chunk("two\n"));
    if (request.target == "/endless") return;  // and never another byte
    connection.write(TestHttpServer::chunk(""));
  });
  const auto target = resolved(server);
  asio::io_context io;
  AsyncHttpConnection connection(io, target);
  std::string seen;
  const std::function<bool(std::string_view)> all = [&](std::string_view piece) {
    seen += piece;
    return true;
  };
  auto ended = complete(io, connection.stream(get("/watch"), kTestWait, all));
  ASSERT_TRUE(ended) << ended.error().message;
  EXPECT_EQ(ended->status, 200);
  EXPECT_EQ(seen, "one\ntwo\n");
  EXPECT_TRUE(ended->body.empty());

  seen.clear();
  const std::function<bool(std::string_view)> until_two = [&](std::string_view piece) {
    seen += piece;
    return !seen.ends_with("two\n");
  };
  auto stopped = complete(io, connection.stream(get("/endless"), kTestWait, until_two));
  ASSERT_TRUE(stopped) << stopped.error().message;
  EXPECT_EQ(stopped->status, 200);
  EXPECT_EQ(seen, "one\ntwo\n");

  seen.clear();
  auto missing = complete(io, connection.stream(get("/missing"), kTestWait, all));
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body, "{\"e\":1}");
  EXPECT_EQ(seen, "");  // an error document is not a stream
  // The stopped stream's connection was closed; the whole one's was kept.
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].connection, 1);
  EXPECT_EQ(requests[2].connection, 2);

  seen.clear();
  auto silent = complete(io, connection.stream(get("/endless"), milliseconds(200), all));
  ASSERT_FALSE(silent);
  EXPECT_EQ(silent.error().code, "timeout");
  EXPECT_EQ(seen, "one\ntwo\n");
}

TEST(AsyncHttpTest, TimesOutAndClosesForGood) {
  TestHttpServer server([](const auto&, auto&) {});  // never answers
  const auto target = resolved(server);
  asio::io_context io;
  AsyncHttpConnection connection(io, target);
  auto late = complete(io, connection.send(get("/slow"), milliseconds(100)));
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, "timeout");

  // close() ends the call in progress, and every later one fails at once.
  std::optional<Result<HttpResponse>> pending;
  const HttpRequest request = get("/slow");
  start(io, connection.send(request, kTestWait), &pending);
  asio::steady_timer later(io, milliseconds(50));
  later.async_wait([&](auto) { connection.close(); });
  io.restart();
  io.run();
  ASSERT_TRUE(pending);
  ASSERT_FALSE(*pending);
  EXPECT_EQ(pending->error().code, "connection_closed");
  auto after = complete(io, connection.send(get("/slow"), kTestWait));
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code, "connection_closed");
}

TEST(AsyncHttpTest, APoolLendsItsConnectionsInTurn) {
  TestHttpServer server([](const TestHttpServer::Request& request, auto& connection) {
    if (request.target == "/silent") return;
    connection.write(TestHttpServer::response(200, "text/plain", request.target));
  });
  const auto target = resolved(server);
  asio::io_context io;
  {
    AsyncHttpPool pool(io, target, 2);
    std::vector<HttpRequest> requests;
    for (int i = 0; i < 6; ++i) requests.push_back(get("/" + std::to_string(i)));
    std::vector<std::optional<Result<HttpResponse>>> answers(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      start(io, pool.send(requests[i], kTestWait), &answers[i]);
    }
    io.run();
    for (size_t i = 0; i < requests.size(); ++i) {
      ASSERT_TRUE(answers[i] && *answers[i]) << i;
      EXPECT_EQ((*answers[i])->body, requests[i].target);
    }
    EXPECT_EQ(server.connections(), 2);
  }
  // Closing the pool ends the call on its one connection and the calls waiting for it.
  AsyncHttpPool pool(io, target, 1);
  const HttpRequest silent = get("/silent");
  std::vector<std::optional<Result<HttpResponse>>> answers(3);
  for (auto& answer : answers) start(io, pool.send(silent, kTestWait), &answer);
  asio::steady_timer later(io, milliseconds(50));
  later.async_wait([&](auto) { pool.close(); });
  io.restart();
  io.run();
  for (const auto& answer : answers) {
    ASSERT_TRUE(answer && !*answer);
    EXPECT_EQ(answer->error().code, "connection_closed");
  }
  auto after = complete(io, pool.send(silent, kTestWait));
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code, "connection_closed");
}

}  // namespace
}  // namespace gpurent::client
