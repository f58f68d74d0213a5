#include "net/http.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>

#include "common/json.h"
#include "net/read_buffer.h"
#include "net/tls.h"

namespace gpurent::net {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kUseAwaitable = asio::use_awaitable;
// "No limit" for a parser. Not boost::none: Beast 1.74 compares a Content-Length against a
// disengaged limit as exceeding it.
constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

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

// A request target's decoded path, without the query.
std::string path_of(std::string_view target) {
  return decode(target.substr(0, target.find('?')), false);
}

// Splits a request target into its decoded path and query parameters.
void parse_target(std::string_view target, std::string* path,
                  std::map<std::string, std::string>* query) {
  const size_t question = target.find('?');
  *path = path_of(target);
  if (question == std::string_view::npos) return;
  std::string_view rest = target.substr(question + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const size_t eq = pair.find('=');
    if (!pair.empty()) {
      (*query)[decode(pair.substr(0, eq), true)] =
          eq == std::string_view::npos ? std::string() : decode(pair.substr(eq + 1), true);
    }
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
}

Request to_request(http::request<http::string_body>&& message) {
  Request request;
  request.method = std::string(message.method_string());
  parse_target(message.target(), &request.path, &request.query);
  request.body = std::move(message.body());
  request.authorization = std::string(message[http::field::authorization]);
  request.idempotency_key = std::string(message["Idempotency-Key"]);
  request.content_type = std::string(message[http::field::content_type]);
  request.accept = std::string(message[http::field::accept]);
  request.cookie = std::string(message[http::field::cookie]);
  request.origin = std::string(message[http::field::origin]);
  request.host = std::string(message[http::field::host]);
  request.csrf_token = std::string(message["X-CSRF-Token"]);
  request.accept_encoding = std::string(message[http::field::accept_encoding]);
  request.if_none_match = std::string(message[http::field::if_none_match]);
  request.forwarded_proto = std::string(message["X-Forwarded-Proto"]);
  return request;
}

RequestHead to_head(const http::request<http::empty_body>& message) {
  RequestHead head;
  head.method = std::string(message.method_string());
  head.target = std::string(message.target());
  parse_target(message.target(), &head.path, &head.query);
  for (const auto& field : message) {
    head.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  return head;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

template <class Message>
void set_headers(Message& message, const Response& response) {
  message.set(http::field::server, "gpurent");
  // A 204 has no body, so no type either.
  if (!response.content_type.empty()) message.set(http::field::content_type, response.content_type);
  for (const auto& [name, value] : response.headers) message.set(name, value);
}

// The bytes of the body that go out: none after a 1xx, 204 or 304 status, which may have none.
size_t sent_body_bytes(const Response& response) {
  const auto status = static_cast<http::status>(response.status);
  const bool bodiless = http::to_status_class(status) == http::status_class::informational ||
                        status == http::status::no_content || status == http::status::not_modified;
  return bodiless ? 0 : response.body.size();
}

// The status line and header of a response sent whole, byte for byte as Beast's serializer
// writes the message it would build (status and reason, "Server", the content type, each of the
// handler's headers replacing an earlier one of that name and going last, the keep-alive
// "Connection" of the version, "Content-Length"), but formatted into one string: for a small
// answer Beast's serializer cost more than all the rest of its handling.
std::string simple_response_head(const Response& response, unsigned version, bool keep_alive) {
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  fields.reserve(4 + response.headers.size());  // server, type, connection, length
  const auto set = [&fields](std::string_view name, std::string_view value) {
    std::erase_if(fields, [name](const auto& field) { return iequals(field.first, name); });
    fields.emplace_back(name, value);
  };
  set("Server", "gpurent");
  if (!response.content_type.empty()) set("Content-Type", response.content_type);
  for (const auto& [name, value] : response.headers) set(name, value);
  if (version >= 11 && !keep_alive) set("Connection", "close");
  if (version < 11 && keep_alive) set("Connection", "keep-alive");
  const std::string length = std::to_string(sent_body_bytes(response));
  set("Content-Length", length);
  std::string head =
      fmt::format("HTTP/{}.{} {} {}\r\n", version / 10, version % 10, response.status,
                  http::obsolete_reason(static_cast<http::status>(response.status)));
  for (const auto& [name, value] : fields) {
    head.append(name).append(": ").append(value).append("\r\n");
  }
  head += "\r\n";
  return head;
}

}  // namespace

std::string RequestHead::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return value;
  }
  return {};
}

namespace {

Response problem_with_status(const Error& error, int status, std::string_view title) {
  Json body = {{"type", "urn:gpurent:problem:" + error.code},
               {"title", title},
               {"status", status},
               {"code", error.code},
               {"detail", error.message}};
  return Response{status, "application/problem+json", body.dump(), {}, {}};
}

// A forwarded exchange that the upstream did not complete: 502, which no ErrorKind maps to (503
// says this server is unavailable; here the one behind it is).
Response bad_gateway(std::string code, std::string detail) {
  return problem_with_status({ErrorKind::kUnavailable, std::move(code), std::move(detail)}, 502,
                             "Bad Gateway");
}

}  // namespace

Response problem_response(const Error& error) {
  return problem_with_status(error, http_status(error.kind), error_kind_title(error.kind));
}

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(asio::io_context& io, Handler handler, HttpLimits limits, Forwarder forwarder)
      : io(io),
        acceptor(io),
        handler(std::move(handler)),
        limits(limits),
        forwarder(std::move(forwarder)) {}

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
      // Answers go out in more than one write (a header, then body pieces; a forwarded exchange
      // relays as it reads): with Nagle's algorithm each would wait for the peer's delayed ACK.
      socket.set_option(tcp::no_delay(true), ec);
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
    beast::error_code ec;
    const auto peer = socket.remote_endpoint(ec);
    Peer client{.address = ec ? std::string() : peer.address().to_string()};
    beast::tcp_stream stream(std::move(socket));
    if (const std::shared_ptr<const TlsContext> context = tls) {
      beast::ssl_stream<beast::tcp_stream> secured(std::move(stream), context->ssl());
      secured.next_layer().expires_after(kHandshakeTimeout);
      co_await secured.async_handshake(asio::ssl::stream_base::server,
                                       asio::redirect_error(kUseAwaitable, ec));
      if (!ec) {
        client.tls = true;
        client.certificate = verified_subject(secured.native_handle());
        co_await serve(secured, client);
      }
      secured.next_layer().socket().shutdown(tcp::socket::shutdown_send, ec);
    } else {
      co_await serve(stream, client);
      stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    }
    --connections;
  }

  // Who is at the other end of a connection.
  struct Peer {
    std::string address;      // "" when unknown
    bool tls = false;         // the connection is TLS
    std::string certificate;  // the common name of its verified client certificate, or ""
  };

  // The common name of the client's certificate if it presented one that verified, else "".
  static std::string verified_subject(SSL* ssl) {
    X509* certificate = SSL_get0_peer_certificate(ssl);
    if (certificate == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return {};
    std::array<char, 256> name{};
    const int length = X509_NAME_get_text_by_NID(X509_get_subject_name(certificate), NID_commonName,
                                                 name.data(), name.size());
    return length > 0 ? std::string(name.data(), static_cast<size_t>(length)) : std::string();
  }

  // Serves requests on one connection until either side ends it.
  template <class Stream>
  asio::awaitable<void> serve(Stream& stream, const Peer& peer) {
    beast::error_code ec;
    beast::flat_buffer buffer;
    buffer.reserve(kReadBufferBytes);
    for (;;) {
      // The header first: a claimed request is forwarded with its body unread (it streams); any
      // other is read whole, within max_body_bytes.
      http::request_parser<http::empty_body> head_parser;
      head_parser.header_limit(16 * 1024);
      head_parser.body_limit(kUnlimited);  // checked below, once it is known who reads the body
      beast::get_lowest_layer(stream).expires_after(limits.idle_timeout);
      co_await http::async_read_header(stream, buffer, head_parser,
                                       asio::redirect_error(kUseAwaitable, ec));
      if (ec == http::error::end_of_stream || ec == asio::error::eof ||
          ec == beast::error::timeout || ec == asio::error::connection_reset ||
          ec == asio::ssl::error::stream_truncated) {
        break;
      }
      if (ec) {
        co_await refuse(stream, Error::invalid("malformed_request", ec.message()));
        break;
      }
      const auto& head = head_parser.get();
      if (forwarder.claims && forwarder.claims(head.method_string(), path_of(head.target()))) {
        if (!co_await forward(stream, buffer, head_parser, peer.address)) break;
        continue;
      }
      if (head_parser.content_length() && *head_parser.content_length() > limits.max_body_bytes) {
        co_await refuse(stream, too_large());
        break;
      }
      http::request_parser<http::string_body> parser{std::move(head_parser)};
      parser.body_limit(limits.max_body_bytes);  // a chunked body is counted as it comes
      co_await http::async_read(stream, buffer, parser, asio::redirect_error(kUseAwaitable, ec));
      if (ec) {
        // Unparseable or oversized request: answer once, then close (the stream is out of sync).
        // Named first: GCC 12 frees a conditional expression's temporary twice when it is the
        // operand of a co_await's call (heap corruption on every oversized chunked body).
        Error refusal = ec == http::error::body_limit
                            ? too_large()
                            : Error::invalid("malformed_request", ec.message());
        co_await refuse(stream, refusal);
        break;
      }
      const bool keep_alive = parser.get().keep_alive();
      const unsigned version = parser.get().version();
      Request request = to_request(parser.release());
      request.peer_address = peer.address;
      request.tls = peer.tls;
      request.client_certificate = peer.certificate;
      Response response = co_await call_handler(std::move(request));
      beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
      if (!response.chunks) {
        co_await write_simple(stream, response, version, keep_alive, ec);
      } else {
        co_await write_chunked(stream, response, version, keep_alive, ec);
      }
      if (ec || !keep_alive) break;
    }
  }

  Error too_large() const {
    return Error{ErrorKind::kPayloadTooLarge, "payload_too_large",
                 fmt::format("request bodies are limited to {} bytes", limits.max_body_bytes)};
  }

  // Answers a request that cannot be read further, then closes.
  template <class Stream>
  static asio::awaitable<void> refuse(Stream& stream, const Error& error) {
    beast::error_code ec;
    co_await write_simple(stream, problem_response(error), 11, false, ec);
    co_await drain(stream);
  }

  // Forwards one claimed request (forwarder.decide says where) and relays the answer. Returns
  // whether the client connection can serve another request.
  template <class Stream>
  asio::awaitable<bool> forward(Stream& stream, beast::flat_buffer& buffer,
                                http::request_parser<http::empty_body>& head_parser,
                                const std::string& peer_address) {
    const auto& head = head_parser.get();
    const bool client_keep_alive = head.keep_alive();
    const unsigned version = head.version();
    // A request body that is not forwarded is not read either, so the connection cannot be reused.
    const bool has_body = head_parser.chunked() || head_parser.content_length().value_or(0) > 0;
    RequestHead claimed = to_head(head);
    claimed.peer_address = peer_address;
    ForwardDecision decision = co_await decide(std::move(claimed));
    beast::error_code ec;
    if (auto* answer = std::get_if<Response>(&decision)) {
      const bool keep_alive = client_keep_alive && !has_body;
      beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
      co_await write_simple(stream, *answer, version, keep_alive, ec);
      if (!keep_alive) co_await drain(stream);
      co_return keep_alive && !ec;
    }
    const ForwardTo& to = std::get<ForwardTo>(decision);
    beast::tcp_stream upstream(io);
    tcp::resolver resolver(io);
    upstream.expires_after(kForwardConnectTimeout);
    const auto endpoints = co_await resolver.async_resolve(to.host, std::to_string(to.port),
                                                           asio::redirect_error(kUseAwaitable, ec));
    if (!ec) co_await upstream.async_connect(endpoints, asio::redirect_error(kUseAwaitable, ec));
    if (!ec) upstream.socket().set_option(tcp::no_delay(true), ec);
    if (ec) {
      const Response answer =
          bad_gateway("upstream_unavailable",
                      fmt::format("cannot reach {}:{}: {}", to.host, to.port, ec.message()));
      co_await write_simple(stream, answer, version, false, ec);
      co_await drain(stream);
      co_return false;
    }

    if (to.raw) {
      if (!head_parser.upgrade() || has_body) {
        co_await write_simple(
            stream,
            problem_response(Error::invalid("upgrade_required",
                                            "this is a byte tunnel: send a bodiless request with "
                                            "'Connection: Upgrade' and 'Upgrade: <protocol>'")),
            version, false, ec);
        co_await drain(stream);
        co_return false;
      }
      http::response<http::empty_body> switching{http::status::switching_protocols, version};
      switching.set(http::field::connection, "Upgrade");
      switching.set(http::field::upgrade, head[http::field::upgrade]);
      beast::get_lowest_layer(stream).expires_after(kForwardIoTimeout);
      co_await http::async_write(stream, switching, asio::redirect_error(kUseAwaitable, ec));
      beast::flat_buffer upstream_buffer;
      if (!ec) co_await tunnel(stream, buffer, upstream, upstream_buffer);
      co_return false;
    }
    http::request_parser<http::buffer_body> request_parser{std::move(head_parser)};
    request_parser.body_limit(kUnlimited);
    auto& request = request_parser.get();
    const bool upgrade = request_parser.upgrade();
    request.target(to.target);
    for (const auto& name : to.remove_headers) request.erase(name);
    for (const auto& [name, value] : to.set_headers) request.set(name, value);
    request.erase("Keep-Alive");
    // The client waits for a 100 Continue before it sends the body: it comes from here, and the
    // upstream is not asked for one (its interim answer would otherwise be taken for the final
    // one).
    if (beast::iequals(request[http::field::expect], "100-continue")) {
      request.erase(http::field::expect);
      beast::get_lowest_layer(stream).expires_after(kForwardIoTimeout);
      co_await asio::async_write(stream,
                                 asio::buffer(std::string_view("HTTP/1.1 100 Continue\r\n\r\n")),
                                 asio::redirect_error(kUseAwaitable, ec));
      if (ec) co_return false;
    }
    // One upstream connection per exchange (no pool), so it is closed after the answer; an upgrade
    // keeps its Connection: Upgrade.
    if (!upgrade) request.keep_alive(false);
    http::request_serializer<http::buffer_body> request_writer{request};
    co_await relay(stream, buffer, request_parser, upstream, request_writer, to.idle_timeout, ec);
    if (ec) {
      const Response answer = bad_gateway(
          "upstream_failed",
          fmt::format("forwarding to {}:{} failed: {}", to.host, to.port, ec.message()));
      co_await write_simple(stream, answer, version, false, ec);
      co_return false;
    }

    beast::flat_buffer upstream_buffer;
    upstream_buffer.reserve(kReadBufferBytes);
    http::response_parser<http::buffer_body> response_parser;
    response_parser.body_limit(kUnlimited);
    if (request.method() == http::verb::head) response_parser.skip(true);
    upstream.expires_after(to.idle_timeout);
    co_await http::async_read_header(upstream, upstream_buffer, response_parser,
                                     asio::redirect_error(kUseAwaitable, ec));
    if (ec) {
      const Response answer =
          bad_gateway("upstream_failed",
                      fmt::format("{}:{} gave no answer: {}", to.host, to.port, ec.message()));
      co_await write_simple(stream, answer, version, false, ec);
      co_return false;
    }
    auto& response = response_parser.get();
    if (upgrade && response.result() == http::status::switching_protocols) {
      http::response<http::empty_body> switching{response.base()};
      beast::get_lowest_layer(stream).expires_after(kForwardIoTimeout);
      co_await http::async_write(stream, switching, asio::redirect_error(kUseAwaitable, ec));
      if (!ec) co_await tunnel(stream, buffer, upstream, upstream_buffer);
      co_return false;
    }
    // The answer is delimited for the client when its length is known; one that ends at EOF ends
    // the client's connection too.
    const unsigned status = response.result_int();
    const bool delimited = response_parser.chunked() || response_parser.content_length() ||
                           request.method() == http::verb::head || status / 100 == 1 ||
                           status == 204 || status == 304;
    const bool keep_alive = client_keep_alive && delimited && !has_body_left(request_parser);
    response.erase("Keep-Alive");
    response.keep_alive(keep_alive);
    http::response_serializer<http::buffer_body> response_writer{response};
    co_await relay(upstream, upstream_buffer, response_parser, stream, response_writer,
                   to.idle_timeout, ec);
    co_return keep_alive && !ec;
  }

  static bool has_body_left(const http::request_parser<http::buffer_body>& parser) {
    return !parser.is_done();
  }

  // Copies one message from `in` (its header already parsed into `parser`) to `out`: the header,
  // then the body piece by piece as it arrives (the serializer re-frames it, chunked or not).
  template <class Source, class Parser, class Sink, class Serializer>
  static asio::awaitable<void> relay(Source& in, beast::flat_buffer& in_buffer, Parser& parser,
                                     Sink& out, Serializer& writer,
                                     std::chrono::seconds idle_timeout, beast::error_code& ec) {
    beast::get_lowest_layer(out).expires_after(idle_timeout);
    co_await http::async_write_header(out, writer, asio::redirect_error(kUseAwaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    std::array<char, 64 * 1024> piece;
    // Beast reads as much as the buffer has room for: after a small header that is a few hundred
    // bytes per read, which would make a large body cost a system call per half kilobyte.
    in_buffer.reserve(piece.size());
    auto& body = parser.get().body();
    while (!ec && !writer.is_done()) {
      if (!parser.is_done()) {
        body.data = piece.data();
        body.size = piece.size();
        beast::get_lowest_layer(in).expires_after(idle_timeout);
        co_await http::async_read(in, in_buffer, parser, asio::redirect_error(kUseAwaitable, ec));
        if (ec == http::error::need_buffer) ec = {};
        if (ec) break;
        body.size = piece.size() - body.size;
        body.data = piece.data();
        body.more = !parser.is_done();
      } else {
        body.data = nullptr;
        body.size = 0;
        body.more = false;
      }
      beast::get_lowest_layer(out).expires_after(idle_timeout);
      co_await http::async_write(out, writer, asio::redirect_error(kUseAwaitable, ec));
      if (ec == http::error::need_buffer) ec = {};
    }
  }

  // After a 101: bytes both ways until either side closes (or kTunnelIdleTimeout of silence).
  // What either side sent beyond its header is already in its buffer and goes first.
  template <class Stream>
  asio::awaitable<void> tunnel(Stream& client, beast::flat_buffer& client_buffer,
                               beast::tcp_stream& upstream, beast::flat_buffer& upstream_buffer) {
    struct Latch {
      explicit Latch(asio::io_context& io) : timer(io) {
        timer.expires_at(asio::steady_timer::time_point::max());
      }
      asio::steady_timer timer;
      bool done = false;
    };
    auto latch = std::make_shared<Latch>(io);
    asio::co_spawn(
        io,
        [&client, &client_buffer, &upstream, latch]() -> asio::awaitable<void> {
          co_await pump(client, client_buffer, upstream);
          latch->done = true;
          latch->timer.cancel();
        },
        asio::detached);
    co_await pump(upstream, upstream_buffer, client);
    // The other direction ends soon too: either its peer closes in turn, or a reset or the idle
    // timeout ends it; the streams it uses live in this frame, so it is awaited.
    beast::error_code ec;
    if (!latch->done) {
      latch->timer.expires_after(std::chrono::seconds(5));
      co_await latch->timer.async_wait(asio::redirect_error(kUseAwaitable, ec));
    }
    if (!latch->done) {
      beast::get_lowest_layer(client).socket().close(ec);
      upstream.socket().close(ec);
      while (!latch->done) {
        latch->timer.expires_at(asio::steady_timer::time_point::max());
        co_await latch->timer.async_wait(asio::redirect_error(kUseAwaitable, ec));
      }
    }
  }

  template <class From, class To>
  static asio::awaitable<void> pump(From& from, beast::flat_buffer& pending, To& to) {
    beast::error_code ec;
    if (pending.size() > 0) {
      beast::get_lowest_layer(to).expires_after(kTunnelIdleTimeout);
      co_await asio::async_write(to, pending.data(), asio::redirect_error(kUseAwaitable, ec));
      pending.consume(pending.size());
    }
    std::array<char, 64 * 1024> bytes;
    while (!ec) {
      beast::get_lowest_layer(from).expires_after(kTunnelIdleTimeout);
      const size_t n = co_await from.async_read_some(asio::buffer(bytes),
                                                     asio::redirect_error(kUseAwaitable, ec));
      if (n > 0) {
        beast::error_code write_ec;
        beast::get_lowest_layer(to).expires_after(kTunnelIdleTimeout);
        co_await asio::async_write(to, asio::buffer(bytes.data(), n),
                                   asio::redirect_error(kUseAwaitable, write_ec));
        if (write_ec) break;
      }
    }
    // EOF (or an error) on one side: pass the half-close on, so the other direction can finish.
    beast::get_lowest_layer(to).socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  asio::awaitable<ForwardDecision> decide(RequestHead head) {
    try {
      co_return co_await forwarder.decide(std::move(head));
    } catch (const std::exception& e) {
      spdlog::error("forward decision failed: {}", e.what());
      co_return problem_response(Error::internal("internal error"));
    }
  }

  // After refusing a request mid-body, read and discard what the client is still sending (bounded
  // in bytes and time) before closing: closing a socket with unread data makes the kernel send a
  // reset, and the client would lose the answer it has not read yet.
  template <class Stream>
  static asio::awaitable<void> drain(Stream& stream) {
    constexpr size_t kMaxDrainBytes = 16 << 20;
    beast::error_code ec;
    beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_send, ec);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(2));
    std::array<char, 64 * 1024> sink;
    size_t drained = 0;
    while (!ec && drained < kMaxDrainBytes) {
      drained += co_await stream.async_read_some(asio::buffer(sink),
                                                 asio::redirect_error(kUseAwaitable, ec));
    }
  }

  template <class Stream>
  static asio::awaitable<void> write_simple(Stream& stream, const Response& response,
                                            unsigned version, bool keep_alive,
                                            beast::error_code& ec) {
    const std::string head = simple_response_head(response, version, keep_alive);
    const std::array<asio::const_buffer, 2> message{
        asio::buffer(head), asio::buffer(response.body.data(), sent_body_bytes(response))};
    co_await asio::async_write(stream, message, asio::redirect_error(kUseAwaitable, ec));
  }

  template <class Stream>
  static asio::awaitable<void> write_chunked(Stream& stream, const Response& response,
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
        beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
        co_await asio::async_write(stream, http::make_chunk(asio::buffer(*chunk)),
                                   asio::redirect_error(kUseAwaitable, ec));
      }
      if (ec) break;
      beast::get_lowest_layer(stream).expires_never();  // the source may wait long for a piece
      chunk = co_await response.chunks();
    }
    if (!ec) {
      beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
      co_await asio::async_write(stream, http::make_chunk_last(),
                                 asio::redirect_error(kUseAwaitable, ec));
    }
  }

  asio::io_context& io;
  tcp::acceptor acceptor;
  Handler handler;
  HttpLimits limits;
  Forwarder forwarder;
  std::shared_ptr<const TlsContext> tls;  // new connections' TLS; none: plain HTTP
  size_t connections = 0;
};

HttpServer::HttpServer(asio::io_context& io, Handler handler, HttpLimits limits,
                       Forwarder forwarder)
    : impl_(std::make_shared<Impl>(io, std::move(handler), limits, std::move(forwarder))) {}

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

void HttpServer::set_tls(std::shared_ptr<const TlsContext> tls) { impl_->tls = std::move(tls); }

void HttpServer::close() {
  beast::error_code ec;
  impl_->acceptor.close(ec);
}

}  // namespace gpurent::net
