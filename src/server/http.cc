#include "server/http.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <spdlog/spdlog.h>

#include <array>

#include "common/json.h"

namespace gpurent::server {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kUseAwaitable = asio::use_awaitable;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decoding; '+' is a space only in query strings. Malformed escapes are kept verbatim.
std::string decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const int hi = hex_value(text[i + 1]), lo = hex_value(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && text[i] == '+' ? ' ' : text[i]);
  }
  return out;
}

Request to_request(const http::request<http::string_body>& message) {
  Request request;
  request.method = std::string(message.method_string());
  const std::string_view target = message.target();
  const size_t question = target.find('?');
  request.path = decode(target.substr(0, question), false);
  if (question != std::string_view::npos) {
    std::string_view query = target.substr(question + 1);
    while (!query.empty()) {
      const size_t amp = query.find('&');
      const std::string_view pair = query.substr(0, amp);
      const size_t eq = pair.find('=');
      if (!pair.empty()) {
        request.query[decode(pair.substr(0, eq), true)] =
            eq == std::string_view::npos ? std::string() : decode(pair.substr(eq + 1), true);
      }
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
  }
  request.body = message.body();
  request.authorization = std::string(message[http::field::authorization]);
  request.idempotency_key = std::string(message["Idempotency-Key"]);
  request.content_type = std::string(message[http::field::content_type]);
  return request;
}

template <class Message>
void set_headers(Message& message, const Response& response) {
  message.set(http::field::server, "gpurent");
  // A 204 has no body, so no type either.
  if (!response.content_type.empty()) message.set(http::field::content_type, response.content_type);
  for (const auto& [name, value] : response.headers) message.set(name, value);
}

}  // namespace

Response problem_response(const Error& error) {
  const int status = http_status(error.kind);
  Json body = {{"type", "urn:gpurent:problem:" + error.code},
               {"title", error_kind_title(error.kind)},
               {"status", status},
               {"code", error.code},
               {"detail", error.message}};
  return Response{status, "application/problem+json", body.dump(), {}, {}};
}

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(asio::io_context& io, Handler handler, HttpLimits limits)
      : io(io), acceptor(io), handler(std::move(handler)), limits(limits) {}

  asio::awaitable<void> accept_loop() {
    auto self = shared_from_this();
    while (acceptor.is_open()) {
      beast::error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(kUseAwaitable, ec));
      if (ec) {
        if (ec == asio::error::operation_aborted) break;
        // EMFILE and friends: back off briefly instead of spinning.
        spdlog::warn("accept failed: {}", ec.message());
        asio::steady_timer pause(io, std::chrono::milliseconds(50));
        co_await pause.async_wait(asio::redirect_error(kUseAwaitable, ec));
        continue;
      }
      if (connections >= limits.max_connections) {
        socket.close(ec);
        continue;
      }
      asio::co_spawn(io, session(std::move(socket)), asio::detached);
    }
  }

  asio::awaitable<Response> call_handler(Request request) {
    // The API code returns errors as values; an exception here is a bug, reported as a 500 with
    // its message logged, never a dead server.
    try {
      co_return co_await handler(std::move(request));
    } catch (const std::exception& e) {
      spdlog::error("handler failed: {}", e.what());
      co_return problem_response(Error::internal("internal error"));
    }
  }

  asio::awaitable<void> session(tcp::socket socket) {
    auto self = shared_from_this();
    ++connections;
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    beast::error_code ec;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(limits.max_body_bytes);
      parser.header_limit(16 * 1024);
      stream.expires_after(limits.idle_timeout);
      co_await http::async_read(stream, buffer, parser, asio::redirect_error(kUseAwaitable, ec));
      if (ec == http::error::end_of_stream || ec == asio::error::eof ||
          ec == beast::error::timeout || ec == asio::error::connection_reset) {
        break;
      }
      if (ec) {
        // Unparseable or oversized request: answer once, then close (the stream is out of sync).
        const Error error = ec == http::error::body_limit
                                ? Error{ErrorKind::kPayloadTooLarge, "payload_too_large",
                                        fmt::format("request bodies are limited to {} bytes",
                                                    limits.max_body_bytes)}
                                : Error::invalid("malformed_request", ec.message());
        co_await write_simple(stream, problem_response(error), 11, false, ec);
        co_await drain(stream);
        break;
      }
      const auto& message = parser.get();
      const bool keep_alive = message.keep_alive();
      const unsigned version = message.version();
      Response response = co_await call_handler(to_request(message));
      stream.expires_after(std::chrono::seconds(30));
      if (!response.chunks) {
        co_await write_simple(stream, response, version, keep_alive, ec);
      } else {
        co_await write_chunked(stream, response, version, keep_alive, ec);
      }
      if (ec || !keep_alive) break;
    }
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    --connections;
  }

  // After refusing a request mid-body, read and discard what the client is still sending (bounded
  // in bytes and time) before closing: closing a socket with unread data makes the kernel send a
  // reset, and the client would lose the answer it has not read yet.
  static asio::awaitable<void> drain(beast::tcp_stream& stream) {
    constexpr size_t kMaxDrainBytes = 16 << 20;
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream.expires_after(std::chrono::seconds(2));
    std::array<char, 64 * 1024> sink;
    size_t drained = 0;
    while (!ec && drained < kMaxDrainBytes) {
      drained += co_await stream.async_read_some(asio::buffer(sink),
                                                 asio::redirect_error(kUseAwaitable, ec));
    }
  }

  static asio::awaitable<void> write_simple(beast::tcp_stream& stream, const Response& response,
                                            unsigned version, bool keep_alive,
                                            beast::error_code& ec) {
    http::response<http::string_body> message{static_cast<http::status>(response.status), version};
    set_headers(message, response);
    message.keep_alive(keep_alive);
    message.body() = response.body;
    message.prepare_payload();
    co_await http::async_write(stream, message, asio::redirect_error(kUseAwaitable, ec));
  }

  static asio::awaitable<void> write_chunked(beast::tcp_stream& stream, const Response& response,
                                             unsigned version, bool keep_alive,
                                             beast::error_code& ec) {
    http::response<http::empty_body> message{static_cast<http::status>(response.status), version};
    set_headers(message, response);
    message.keep_alive(keep_alive);
    message.chunked(true);
    http::response_serializer<http::empty_body> serializer{message};
    co_await http::async_write_header(stream, serializer, asio::redirect_error(kUseAwaitable, ec));
    std::optional<std::string> chunk = response.body;
    while (!ec && chunk) {
      if (!chunk->empty()) {
        stream.expires_after(std::chrono::seconds(30));
        co_await asio::async_write(stream, http::make_chunk(asio::buffer(*chunk)),
                                   asio::redirect_error(kUseAwaitable, ec));
      }
      if (ec) break;
      stream.expires_never();  // the source may wait a long time for the next piece
      chunk = co_await response.chunks();
    }
    if (!ec) {
      stream.expires_after(std::chrono::seconds(30));
      co_await asio::async_write(stream, http::make_chunk_last(),
                                 asio::redirect_error(kUseAwaitable, ec));
    }
  }

  asio::io_context& io;
  tcp::acceptor acceptor;
  Handler handler;
  HttpLimits limits;
  size_t connections = 0;
};

HttpServer::HttpServer(asio::io_context& io, Handler handler, HttpLimits limits)
    : impl_(std::make_shared<Impl>(io, std::move(handler), limits)) {}

HttpServer::~HttpServer() { close(); }

Result<uint16_t> HttpServer::listen(const std::string& host, uint16_t port) {
  beast::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec)
    return fail(
        Error::invalid("invalid_listen_address", fmt::format("'{}': {}", host, ec.message())));
  const tcp::endpoint endpoint(address, port);
  auto& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return fail(Error{ErrorKind::kUnavailable, "listen_failed",
                      fmt::format("cannot listen on {}:{}: {}", host, port, ec.message())});
  }
  const uint16_t bound = acceptor.local_endpoint().port();
  asio::co_spawn(impl_->io, impl_->accept_loop(), asio::detached);
  return bound;
}

void HttpServer::close() {
  beast::error_code ec;
  impl_->acceptor.close(ec);
}

}  // namespace gpurent::server
