// Boost.Beast on C++20 coroutines (with http_client.cc, the only translation units that include
// Beast: it is the slowest header set of the build). GCC 12 miscompiles some co_await forms (a
// capturing lambda as a temporary in the awaited expression, co_await in a loop condition), so
// every co_await here stands alone.
#include <utility>  // before Asio: Boost 1.74 with C++20 coroutines needs it

#include "client/async_http.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include <fmt/format.h>

#include <array>
#include <iterator>
#include <limits>

#include "client/http_wire.h"
#include "net/read_buffer.h"

namespace gpurent::client {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr auto kAwaitable = asio::use_awaitable;

Error closed_error(std::string_view base_url) {
  return {ErrorKind::kUnavailable, "connection_closed",
          fmt::format("the connection to {} was closed", base_url)};
}

}  // namespace

struct ResolvedServer::Endpoints {
  tcp::resolver::results_type addresses;
};

Result<ResolvedServer> ResolvedServer::resolve(std::string_view base_url,
                                               AsyncHttpOptions options) {
  GPURENT_TRY(url, parse_base_url(base_url));
  if (url.tls || !url.socket_path.empty()) {
    return fail(Error::invalid(
        "invalid_url",
        fmt::format("invalid server URL '{}': the asynchronous client speaks http:// only",
                    base_url)));
  }
  asio::io_context io;
  beast::error_code ec;
  auto addresses = tcp::resolver(io).resolve(url.host, url.port, ec);
  if (ec) {
    return fail(Error{ErrorKind::kUnavailable, "connection_failed",
                      fmt::format("cannot resolve '{}': {}", url.host, ec.message())});
  }
  ResolvedServer server;
  server.base_url_ = std::move(url.base_url);
  server.authority_ = std::move(url.authority);
  server.options_ = std::move(options);
  server.endpoints_ = std::make_shared<const Endpoints>(Endpoints{std::move(addresses)});
  return server;
}

struct AsyncHttpConnection::Impl {
  Impl(asio::io_context& io, const ResolvedServer& server) : stream(io), server(server) {
    buffer.reserve(net::kReadBufferBytes);
  }

  asio::awaitable<Result<HttpResponse>> exchange(
      const HttpRequest& request, std::chrono::milliseconds timeout,
      const std::function<bool(std::string_view)>* on_piece) {
    if (auto checked = check_request(request); !checked) {
      co_return fail(std::move(checked).error());
    }
    // Formatted directly: Beast's serializer cost more than building the request (as the
    // server's answers, net/http.cc).
    std::string head =
        fmt::format("{} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: {}\r\n", request.method,
                    request.target, server.authority_, server.options_.user_agent);
    for (const auto& [name, value] : request.headers) {
      fmt::format_to(std::back_inserter(head), "{}: {}\r\n", name, value);
    }
    if (!request.body.empty()) {
      fmt::format_to(std::back_inserter(head), "Content-Type: {}\r\n", request.content_type);
    }
    const bool head_only = request.method == "HEAD";
    if (!request.body.empty() || (request.method != "GET" && !head_only)) {
      fmt::format_to(std::back_inserter(head), "Content-Length: {}\r\n", request.body.size());
    }
    head += "\r\n";
    const std::array<asio::const_buffer, 2> wire{asio::buffer(head), asio::buffer(request.body)};
    const bool repeatable = server.options_.repeatable || request.method == "GET" || head_only;
    for (int attempt = 0;; ++attempt) {
      if (closed) co_return fail(closed_error(server.base_url_));
      const bool reused = open;
      beast::error_code ec;
      if (!open) {
        stream.expires_after(timeout);
        co_await stream.async_connect(server.endpoints_->addresses,
                                      asio::redirect_error(kAwaitable, ec));
        if (ec) {
          drop();
          co_return fail(transport_error(request, ec, timeout));
        }
        // Requests are written in one piece and answers awaited; Nagle would only add latency.
        beast::error_code ignored;
        stream.socket().set_option(tcp::no_delay(true), ignored);
        open = true;
      }
      stream.expires_after(timeout);
      co_await asio::async_write(stream, wire, asio::redirect_error(kAwaitable, ec));
      const bool written = !ec;
      http::response_parser<http::string_body> parser;
      // The answer to HEAD announces a body it does not carry.
      parser.skip(head_only);
      // A stream has no end, and Beast counts its chunks against the limit: none for a stream
      // (its reader bounds each piece), as HttpClient::stream does.
      parser.body_limit(on_piece ? std::numeric_limits<std::uint64_t>::max()
                                 : kMaxResponseBodyBytes);
      // A streamed body's pieces go to on_piece as they are parsed, never into the body.
      bool stopped = false;
      auto to_piece = [&](uint64_t, std::string_view piece, beast::error_code& stop) {
        if (!(*on_piece)(piece)) {
          stopped = true;
          stop = asio::error::operation_aborted;
        }
        return piece.size();
      };
      if (on_piece) parser.on_chunk_body(to_piece);
      if (!ec && !on_piece) {
        co_await http::async_read(stream, buffer, parser, asio::redirect_error(kAwaitable, ec));
      }
      while (!ec && on_piece && !parser.is_done()) {
        stream.expires_after(timeout);  // per piece: a stream has no end to wait for
        co_await http::async_read_some(stream, buffer, parser,
                                       asio::redirect_error(kAwaitable, ec));
      }
      if (stopped) {
        drop();
        co_return HttpResponse{static_cast<int>(parser.get().result_int()), "", ""};
      }
      if (ec) {
        const bool answered = parser.got_some();
        drop();
        // A kept-alive connection the server closed in the meantime (the retry rule, header).
        if (reused && attempt == 0 && !answered && ec != beast::error::timeout &&
            (!written || repeatable)) {
          continue;
        }
        co_return fail(transport_error(request, ec, timeout));
      }
      auto& message = parser.get();
      if (!message.keep_alive()) drop();
      co_return HttpResponse{static_cast<int>(message.result_int()),
                             std::string(message[http::field::content_type]),
                             std::move(message.body())};
    }
  }

  // Also ends the operation in progress, which then fails.
  void drop() {
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream.close();
    buffer.clear();
    open = false;
  }

  Error transport_error(const HttpRequest& request, beast::error_code ec,
                        std::chrono::milliseconds timeout) const {
    if (closed) return closed_error(server.base_url_);
    if (ec == http::error::body_limit) {
      return {ErrorKind::kInternal, "response_too_large",
              fmt::format("{} {}{}: the response body exceeds {} bytes", request.method,
                          server.base_url_, request.target, kMaxResponseBodyBytes)};
    }
    if (ec == beast::error::timeout) {
      return {ErrorKind::kUnavailable, "timeout",
              fmt::format("{} {}{}: no answer within {} ms", request.method, server.base_url_,
                          request.target, timeout.count())};
    }
    return {ErrorKind::kUnavailable, "connection_failed",
            fmt::format("{} {}{}: {}", request.method, server.base_url_, request.target,
                        ec == http::error::end_of_stream ? "the server closed the connection"
                                                         : ec.message())};
  }

  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  const ResolvedServer& server;
  bool open = false;
  bool closed = false;  // by close(), for good
};

AsyncHttpConnection::AsyncHttpConnection(asio::io_context& io, const ResolvedServer& server)
    : impl_(std::make_unique<Impl>(io, server)) {}

AsyncHttpConnection::~AsyncHttpConnection() = default;

asio::awaitable<Result<HttpResponse>> AsyncHttpConnection::send(const HttpRequest& request,
                                                                std::chrono::milliseconds timeout) {
  co_return co_await impl_->exchange(request, timeout, nullptr);
}

asio::awaitable<Result<HttpResponse>> AsyncHttpConnection::stream(
    const HttpRequest& request, std::chrono::milliseconds idle,
    const std::function<bool(std::string_view)>& on_piece) {
  co_return co_await impl_->exchange(request, idle, &on_piece);
}

void AsyncHttpConnection::close() {
  impl_->closed = true;
  impl_->drop();
}

struct AsyncHttpPool::Waiter {
  asio::steady_timer timer;  // cancelled to wake it
  AsyncHttpConnection* given = nullptr;
};

AsyncHttpPool::AsyncHttpPool(asio::io_context& io, const ResolvedServer& server, size_t size)
    : io_(io), server_(server) {
  for (size_t i = 0; i < size; ++i) {
    all_.push_back(std::make_unique<AsyncHttpConnection>(io, server));
    idle_.push_back(all_.back().get());
  }
}

AsyncHttpPool::~AsyncHttpPool() = default;

asio::awaitable<Result<HttpResponse>> AsyncHttpPool::send(const HttpRequest& request,
                                                          std::chrono::milliseconds timeout) {
  AsyncHttpConnection* connection = nullptr;
  if (!closed_ && !idle_.empty()) {
    connection = idle_.front();
    idle_.pop_front();
  } else if (!closed_) {
    Waiter waiter{asio::steady_timer(io_, asio::steady_timer::time_point::max())};
    waiters_.push_back(&waiter);
    beast::error_code ignored;
    co_await waiter.timer.async_wait(asio::redirect_error(kAwaitable, ignored));
    connection = waiter.given;
  }
  if (!connection) co_return fail(closed_error(server_.base_url()));
  auto response = co_await connection->send(request, timeout);
  release(connection);
  co_return response;
}

void AsyncHttpPool::release(AsyncHttpConnection* connection) {
  if (waiters_.empty()) {
    idle_.push_back(connection);
    return;
  }
  Waiter* waiter = waiters_.front();
  waiters_.pop_front();
  waiter->given = connection;
  waiter->timer.cancel();
}

void AsyncHttpPool::close() {
  closed_ = true;
  for (auto& connection : all_) connection->close();
  for (Waiter* waiter : waiters_) waiter->timer.cancel();
  waiters_.clear();
}

}  // namespace gpurent::client
