// Boost.Beast lives in this translation unit and async_http.cc only: it is the slowest header set
// in the build, and nothing outside needs it.
//
// Every socket operation is asynchronous and run to completion on a private io_context. The
// beast::tcp_stream expiry bounds each one (it closes the socket when it fires), so io_context::run
// always returns by the deadline without a second thread. An https:// connection is the same stream
// under an OpenSSL TLS layer (beast::ssl_stream); the expiry bounds the handshake as well.
#include "client/http_client.h"

#include <fmt/format.h>
#include <poll.h>

#include <array>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <charconv>
#include <limits>
#include <optional>
#include <thread>
#include <utility>  // before Asio: Boost 1.74's headers rely on it being included

#include "client/http_wire.h"
#include "common/json.h"
#include "net/read_buffer.h"

namespace gpurent::client {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
// One stream type for TCP and unix sockets (the Docker Engine API of the container runtime).
using AnyStreamProtocol = asio::generic::stream_protocol;
using Stream = beast::basic_stream<AnyStreamProtocol>;
using TlsStream = beast::ssl_stream<Stream>;
using SteadyClock = std::chrono::steady_clock;

// Response headers of our own server are a few hundred bytes; a proxy may add some.
constexpr uint32_t kMaxHeaderBytes = 64 * 1024;
// How much of a streamed body is handed to on_chunk at most at once.
constexpr size_t kStreamPieceBytes = 64 * 1024;
constexpr std::string_view kUserAgent = "gpurent-client";

// The deadline of the next socket operation: one fixed instant for send(), a fresh idle window
// per operation for stream().
class Deadline {
 public:
  static Deadline total(std::chrono::milliseconds timeout) {
    return Deadline(SteadyClock::now() + timeout, timeout, false);
  }
  static Deadline idle(std::chrono::milliseconds timeout) { return Deadline({}, timeout, true); }
  SteadyClock::time_point next() const {
    return per_operation_ ? SteadyClock::now() + timeout_ : fixed_;
  }
  std::chrono::milliseconds timeout() const { return timeout_; }
  bool per_operation() const { return per_operation_; }

 private:
  Deadline(SteadyClock::time_point fixed, std::chrono::milliseconds timeout, bool per_operation)
      : fixed_(fixed), timeout_(timeout), per_operation_(per_operation) {}
  SteadyClock::time_point fixed_;
  std::chrono::milliseconds timeout_;
  bool per_operation_;
};

using OutgoingRequest = http::request<http::string_body>;

}  // namespace

// The TLS settings of an https:// client: peers are verified against the trust store (the system's,
// which OpenSSL's default paths give and SSL_CERT_FILE / SSL_CERT_DIR override, or ca_file), and
// nothing older than TLS 1.2 is spoken.
static Result<std::unique_ptr<asio::ssl::context>> make_tls_context(const TlsOptions& options) {
  auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
  context->set_verify_mode(asio::ssl::verify_peer);
  beast::error_code ec;
  if (options.ca_file.empty()) {
    context->set_default_verify_paths(ec);
  } else {
    context->load_verify_file(options.ca_file, ec);
  }
  if (ec) {
    return fail(
        Error::invalid("invalid_ca_file",
                       fmt::format("cannot load the trusted certificates{}: {}",
                                   options.ca_file.empty() ? "" : " from '" + options.ca_file + "'",
                                   ec.message())));
  }
  if (!options.cert_file.empty()) {
    context->use_certificate_chain_file(options.cert_file, ec);
    if (!ec) context->use_private_key_file(options.key_file, asio::ssl::context::pem, ec);
    if (!ec && SSL_CTX_check_private_key(context->native_handle()) != 1) {
      ec = asio::error::invalid_argument;
    }
    if (ec) {
      return fail(
          Error::invalid("invalid_client_certificate",
                         fmt::format("cannot use the client certificate '{}' with the key '{}': {}",
                                     options.cert_file, options.key_file, ec.message())));
    }
  }
  return context;
}

struct HttpClient::Impl {
  Impl(std::vector<BaseUrl> parsed, std::unique_ptr<asio::ssl::context> tls_context)
      : urls(std::move(parsed)), url(urls.front()), tls_context(std::move(tls_context)) {
    buffer.reserve(net::kReadBufferBytes);
  }

  std::vector<BaseUrl> urls;                // the servers, in the order given
  BaseUrl url;                              // the one now in use
  std::optional<asio::ip::address> pinned;  // connect_to(): where to connect instead of url.host
  size_t current = 0;
  bool unreached = false;  // the last request failed before reaching the server
  std::unique_ptr<asio::ssl::context> tls_context;  // https:// only
  asio::io_context io;
  Stream stream{io};             // http:// and unix:// connections
  std::optional<TlsStream> tls;  // an https:// connection (it owns its own Stream)
  beast::flat_buffer buffer;
  bool connected = false;  // stream holds a connection that an earlier exchange left reusable
  std::array<char, kStreamPieceBytes> piece{};

  // Runs one asynchronous operation to completion; returns its error code.
  template <class Initiate>
  beast::error_code run(Initiate&& initiate) {
    beast::error_code result;
    std::forward<Initiate>(initiate)([&result](beast::error_code ec, auto&&...) { result = ec; });
    io.restart();
    io.run();
    return result;
  }

  // The socket under the connection, TLS or not.
  Stream& transport() { return tls ? tls->next_layer() : stream; }

  // Runs one read or write on the connection, bounded by the deadline.
  template <class Operation>
  beast::error_code run_on_connection(const Deadline& deadline, Operation&& operation) {
    transport().expires_at(deadline.next());
    if (tls) return run([&](auto handler) { operation(*tls, std::move(handler)); });
    return run([&](auto handler) { operation(stream, std::move(handler)); });
  }

  // No TLS close_notify: the connection is abandoned, and a client owes the server nothing more.
  void drop() {
    beast::error_code ignored;
    transport().socket().shutdown(AnyStreamProtocol::socket::shutdown_both, ignored);
    transport().close();
    tls.reset();
    buffer.clear();
    connected = false;
  }

  // A kept-alive connection is reusable only while the server has sent nothing on it: readable
  // means it was closed (EOF or reset) or holds bytes that answer no request of ours.
  bool still_usable() {
    if (buffer.size() != 0) return false;
    pollfd poll_fd{transport().socket().native_handle(), POLLIN, 0};
    return ::poll(&poll_fd, 1, 0) == 0;
  }

  Error transport_error(const OutgoingRequest& request, beast::error_code ec,
                        const Deadline& deadline) const {
    if (ec == http::error::body_limit) {
      return {ErrorKind::kInternal, "response_too_large",
              fmt::format("{} {}{}: the response body exceeds {} bytes",
                          std::string_view(request.method_string()), url.base_url,
                          std::string_view(request.target()), kMaxResponseBodyBytes)};
    }
    if (ec == beast::error::timeout) {
      return {ErrorKind::kUnavailable, "timeout",
              fmt::format("{} {}{}: no answer from the server within {} ms{}",
                          std::string_view(request.method_string()), url.base_url,
                          std::string_view(request.target()), deadline.timeout().count(),
                          deadline.per_operation() ? " of silence" : "")};
    }
    const std::string why =
        ec == http::error::end_of_stream ? "the server closed the connection" : ec.message();
    return {ErrorKind::kUnavailable, "connection_failed",
            fmt::format("{} {}{}: {}", std::string_view(request.method_string()), url.base_url,
                        std::string_view(request.target()), why)};
  }

  // From here on the next server of the list.
  void next_server() {
    drop();
    current = (current + 1) % urls.size();
    url = urls[current];
  }

  Error connect_error(std::string_view why) {
    unreached = true;
    return {ErrorKind::kUnavailable, "connection_failed",
            fmt::format("cannot connect to {}: {}", url.base_url, why)};
  }

  // Where to connect: the unix socket, or the host's addresses, resolved within the deadline.
  Result<std::vector<AnyStreamProtocol::endpoint>> resolve(const Deadline& deadline) {
    if (!url.socket_path.empty()) {
      return std::vector{
          AnyStreamProtocol::endpoint(asio::local::stream_protocol::endpoint(url.socket_path))};
    }
    if (pinned) {
      uint16_t port = 0;
      std::from_chars(url.port.data(), url.port.data() + url.port.size(), port);
      return std::vector{AnyStreamProtocol::endpoint(tcp::endpoint(*pinned, port))};
    }
    tcp::resolver resolver(io);
    beast::error_code resolve_error = asio::error::would_block;
    tcp::resolver::results_type results;
    resolver.async_resolve(url.host, url.port,
                           [&](beast::error_code ec, tcp::resolver::results_type found) {
                             resolve_error = ec;
                             results = std::move(found);
                           });
    io.restart();
    io.run_until(deadline.next());
    if (resolve_error == asio::error::would_block) {
      // The resolver's getaddrinfo cannot be interrupted; cancelling only discards its answer.
      resolver.cancel();
      io.restart();
      io.run();
      return fail(connect_error(fmt::format("resolving '{}' took longer than {} ms", url.host,
                                            deadline.timeout().count())));
    }
    if (resolve_error) {
      return fail(
          connect_error(fmt::format("cannot resolve '{}': {}", url.host, resolve_error.message())));
    }
    std::vector<AnyStreamProtocol::endpoint> endpoints;
    for (const auto& entry : results) endpoints.emplace_back(entry.endpoint());
    return endpoints;
  }

  // Returns whether the connection is a reused one.
  Result<bool> ensure_connected(const Deadline& deadline) {
    if (connected) {
      if (still_usable()) return true;
      drop();
    }
    GPURENT_TRY(endpoints, resolve(deadline));
    if (url.tls) tls.emplace(io, *tls_context);
    transport().expires_at(deadline.next());
    const beast::error_code ec =
        run([&](auto handler) { transport().async_connect(endpoints, std::move(handler)); });
    if (ec) {
      drop();
      unreached = true;
      return fail(ec == beast::error::timeout
                      ? Error{ErrorKind::kUnavailable, "timeout",
                              fmt::format("cannot connect to {}: no answer within {} ms",
                                          url.base_url, deadline.timeout().count())}
                      : connect_error(ec.message()));
    }
    // Requests are written in one piece and answers awaited; Nagle would only add latency.
    beast::error_code ignored;
    if (url.socket_path.empty()) transport().socket().set_option(tcp::no_delay(true), ignored);
    if (url.tls) GPURENT_CHECK(handshake(deadline));
    connected = true;
    return false;
  }

  Status handshake(const Deadline& deadline) {
    // SNI names the host for servers with several certificates; an address is not sent (RFC 6066).
    beast::error_code not_an_address;
    asio::ip::make_address(url.host, not_an_address);
    if (not_an_address && SSL_set_tlsext_host_name(tls->native_handle(), url.host.c_str()) != 1) {
      drop();
      return fail(connect_error("cannot set the TLS server name"));
    }
    // A certificate must name this host, not only chain to a trusted root.
    tls->set_verify_callback(asio::ssl::host_name_verification(url.host));
    transport().expires_at(deadline.next());
    const beast::error_code ec = run([&](auto handler) {
      tls->async_handshake(asio::ssl::stream_base::client, std::move(handler));
    });
    if (ec) {
      drop();
      return fail(ec == beast::error::timeout
                      ? Error{ErrorKind::kUnavailable, "timeout",
                              fmt::format("TLS handshake with {}: no answer within {} ms",
                                          url.base_url, deadline.timeout().count())}
                      : connect_error(fmt::format("TLS handshake failed: {}", ec.message())));
    }
    return {};
  }

  // Writes the request and reads the response header into a fresh parser, applying the retry
  // rule of the header: at most two attempts, the second only on a fresh connection.
  template <class Parser, class Configure>
  Status exchange_header(const OutgoingRequest& request, std::optional<Parser>& parser,
                         const Deadline& deadline, Configure&& configure) {
    const bool replayable =
        request.method() == http::verb::get || request.method() == http::verb::head;
    for (int attempt = 0;; ++attempt) {
      auto reused = ensure_connected(deadline);
      if (!reused) return fail(std::move(reused).error());
      const bool may_retry = *reused && attempt == 0;

      beast::error_code ec = run_on_connection(deadline, [&](auto& connection, auto handler) {
        http::async_write(connection, request, std::move(handler));
      });
      if (ec) {
        drop();
        if (may_retry && ec != beast::error::timeout) continue;
        return fail(transport_error(request, ec, deadline));
      }

      parser.emplace();
      parser->header_limit(kMaxHeaderBytes);
      configure(*parser);
      // The answer to HEAD announces a body it does not carry.
      parser->skip(request.method() == http::verb::head);
      ec = run_on_connection(deadline, [&](auto& connection, auto handler) {
        http::async_read_header(connection, buffer, *parser, std::move(handler));
      });
      if (ec) {
        const bool nothing_answered = !parser->got_some();
        drop();
        if (may_retry && replayable && nothing_answered && ec != beast::error::timeout) continue;
        return fail(transport_error(request, ec, deadline));
      }
      return {};
    }
  }

  // After a complete response: keep the connection only if both sides agree to.
  void finish(bool keep_alive) {
    if (!keep_alive || buffer.size() != 0) drop();
  }

  Result<OutgoingRequest> build(const HttpRequest& in) const {
    GPURENT_CHECK(check_request(in));
    OutgoingRequest out{http::string_to_verb(in.method), in.target, 11};
    out.set(http::field::host, url.authority);
    out.set(http::field::user_agent, kUserAgent);
    for (const auto& [name, value] : in.headers) out.set(name, value);
    if (!in.body.empty()) out.set(http::field::content_type, in.content_type);
    out.body() = in.body;
    out.keep_alive(true);
    out.prepare_payload();
    return out;
  }
};

HttpClient::HttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::HttpClient(HttpClient&&) noexcept = default;
HttpClient& HttpClient::operator=(HttpClient&&) noexcept = default;
HttpClient::~HttpClient() = default;

Result<HttpClient> HttpClient::create(std::string_view base_urls, const TlsOptions& tls) {
  std::vector<BaseUrl> urls;
  bool any_tls = false;
  size_t from = 0;
  do {
    const size_t comma = base_urls.find(',', from);
    const auto one = base_urls.substr(from, comma == std::string_view::npos ? comma : comma - from);
    GPURENT_TRY(parsed, parse_base_url(one));
    any_tls = any_tls || parsed.tls;
    urls.push_back(std::move(parsed));
    from = comma == std::string_view::npos ? comma : comma + 1;
  } while (from != std::string_view::npos);
  std::unique_ptr<asio::ssl::context> tls_context;
  if (any_tls) {
    GPURENT_TRY(context, make_tls_context(tls));
    tls_context = std::move(context);
  }
  return HttpClient(std::make_unique<Impl>(std::move(urls), std::move(tls_context)));
}

const std::string& HttpClient::base_url() const { return impl_->url.base_url; }

Status HttpClient::connect_to(std::string_view address) {
  std::optional<asio::ip::address> pinned;
  if (!address.empty()) {
    beast::error_code ec;
    pinned = asio::ip::make_address(address, ec);
    if (ec) {
      return fail(Error::invalid(
          "invalid_address", fmt::format("'{}' is not an IP address: {}", address, ec.message())));
    }
  }
  if (pinned != impl_->pinned) impl_->drop();
  impl_->pinned = pinned;
  return {};
}

namespace {

// A standby's answers for a request that reached no API (server/leader_router.h).
bool answered_by_no_leader(const HttpResponse& answer) {
  if (answer.status != 502 && answer.status != 503) return false;
  const auto body = parse_json_object(answer.body);
  if (!body) return false;
  const auto code = body->find("code");
  return code != body->end() && code->is_string() &&
         (*code == "no_leader" || *code == "not_leader" || *code == "upstream_unavailable");
}

constexpr auto kFailoverPause = std::chrono::milliseconds(200);

}  // namespace

template <class Attempt>
Result<HttpResponse> HttpClient::with_failover(std::chrono::milliseconds budget, Attempt attempt) {
  const auto until = std::chrono::steady_clock::now() + budget;
  for (size_t tried = 1;; ++tried) {
    impl_->unreached = false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    auto answer = attempt(std::max(left, std::chrono::milliseconds(1)));
    const bool elsewhere =
        impl_->urls.size() > 1 && (answer ? answered_by_no_leader(*answer) : impl_->unreached);
    if (!elsewhere || std::chrono::steady_clock::now() >= until) return answer;
    impl_->next_server();
    // Every server was tried: a failover is under way, give it a moment.
    if (tried % impl_->urls.size() == 0) {
      std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
          kFailoverPause, until - std::chrono::steady_clock::now()));
    }
  }
}

Result<HttpResponse> HttpClient::send(const HttpRequest& request,
                                      std::chrono::milliseconds timeout) {
  return with_failover(timeout,
                       [&](std::chrono::milliseconds left) { return send_once(request, left); });
}

Result<HttpResponse> HttpClient::stream(const HttpRequest& request,
                                        const std::function<bool(std::string_view)>& on_chunk,
                                        std::chrono::milliseconds idle_timeout) {
  return with_failover(idle_timeout, [&](std::chrono::milliseconds left) {
    return stream_once(request, on_chunk, left);
  });
}

Result<HttpResponse> HttpClient::send_once(const HttpRequest& request,
                                           std::chrono::milliseconds timeout) {
  GPURENT_TRY(outgoing, impl_->build(request));
  const Deadline deadline = Deadline::total(timeout);
  std::optional<http::response_parser<http::string_body>> parser;
  auto header = impl_->exchange_header(outgoing, parser, deadline,
                                       [](auto& p) { p.body_limit(kMaxResponseBodyBytes); });
  if (!header) return fail(std::move(header).error());

  const beast::error_code ec =
      impl_->run_on_connection(deadline, [&](auto& connection, auto handler) {
        http::async_read(connection, impl_->buffer, *parser, std::move(handler));
      });
  if (ec) {
    impl_->drop();
    return fail(impl_->transport_error(outgoing, ec, deadline));
  }
  auto& message = parser->get();
  impl_->finish(message.keep_alive());
  return HttpResponse{static_cast<int>(message.result_int()),
                      std::string(message[http::field::content_type]), std::move(message.body())};
}

Result<HttpResponse> HttpClient::stream_once(const HttpRequest& request,
                                             const std::function<bool(std::string_view)>& on_chunk,
                                             std::chrono::milliseconds idle_timeout) {
  GPURENT_TRY(outgoing, impl_->build(request));
  const Deadline deadline = Deadline::idle(idle_timeout);
  std::optional<http::response_parser<http::buffer_body>> parser;
  // A stream (a followed log) has no natural end; each piece is bounded by the piece buffer. Not
  // boost::none: Beast 1.74 compares a Content-Length against a disengaged limit as exceeding it.
  auto header = impl_->exchange_header(outgoing, parser, deadline, [](auto& p) {
    p.body_limit(std::numeric_limits<std::uint64_t>::max());
  });
  if (!header) return fail(std::move(header).error());

  HttpResponse answer{.status = static_cast<int>(parser->get().result_int()),
                      .content_type = std::string(parser->get()[http::field::content_type])};
  // Anything but a success is a small (error) document: collected and handed over whole.
  const bool collect = answer.status < 200 || answer.status >= 300;
  std::string& collected = answer.body;
  auto& body = parser->get().body();
  while (!parser->is_done()) {
    body.data = impl_->piece.data();
    body.size = impl_->piece.size();
    beast::error_code ec = impl_->run_on_connection(deadline, [&](auto& connection, auto handler) {
      http::async_read_some(connection, impl_->buffer, *parser, std::move(handler));
    });
    if (ec == http::error::need_buffer) ec = {};  // the piece buffer is full: hand it over
    if (ec) {
      impl_->drop();
      return fail(impl_->transport_error(outgoing, ec, deadline));
    }
    const std::string_view got(impl_->piece.data(), impl_->piece.size() - body.size);
    if (got.empty()) continue;
    if (collect) {
      if (collected.size() + got.size() > kMaxResponseBodyBytes) {
        impl_->drop();
        return fail(impl_->transport_error(outgoing, http::error::body_limit, deadline));
      }
      collected.append(got);
    } else if (!on_chunk(got)) {
      // The rest of the body is unread, so the connection cannot carry another request.
      impl_->drop();
      return answer;
    }
  }
  impl_->finish(parser->get().keep_alive());
  return answer;
}

Result<HttpResponse> HttpClient::tunnel(const HttpRequest& request, int in_fd, int out_fd,
                                        std::chrono::milliseconds connect_timeout) {
  GPURENT_TRY(outgoing, impl_->build(request));
  outgoing.set(http::field::connection, "Upgrade");
  const Deadline deadline = Deadline::total(connect_timeout);
  std::optional<http::response_parser<http::string_body>> parser;
  GPURENT_CHECK(impl_->exchange_header(outgoing, parser, deadline,
                                       [](auto& p) { p.body_limit(kMaxResponseBodyBytes); }));
  HttpResponse answer{.status = static_cast<int>(parser->get().result_int()),
                      .content_type = std::string(parser->get()[http::field::content_type])};
  if (answer.status != 101) {
    const beast::error_code ec =
        impl_->run_on_connection(deadline, [&](auto& connection, auto handler) {
          http::async_read(connection, impl_->buffer, *parser, std::move(handler));
        });
    impl_->drop();
    if (ec) return fail(impl_->transport_error(outgoing, ec, deadline));
    answer.body = std::move(parser->get().body());
    return answer;
  }
  // From here the connection is the tunnel's: no deadline (a session may idle for hours).
  Impl& impl = *impl_;
  impl.transport().expires_never();
  asio::posix::stream_descriptor in(impl.io, ::dup(in_fd));
  asio::posix::stream_descriptor out(impl.io, ::dup(out_fd));
  std::array<char, kStreamPieceBytes> upward{};
  beast::error_code ignored;
  // What the server sent right behind its 101 (an SSH server speaks first) goes out first.
  asio::write(out, impl.buffer.data(), ignored);
  impl.buffer.clear();
  const auto relay = [&](auto& connection) {
    std::function<void()> read_in = [&] {
      in.async_read_some(asio::buffer(upward), [&](beast::error_code ec, size_t n) {
        if (ec) {  // the local side is done: a plain connection says so, half-closed
          if (!impl.tls)
            impl.stream.socket().shutdown(AnyStreamProtocol::socket::shutdown_send, ec);
          return;
        }
        asio::async_write(connection, asio::buffer(upward.data(), n),
                          [&](beast::error_code written, size_t) {
                            if (!written) read_in();
                          });
      });
    };
    std::function<void()> read_server = [&] {
      connection.async_read_some(asio::buffer(impl.piece), [&](beast::error_code ec, size_t n) {
        if (!ec) asio::write(out, asio::buffer(impl.piece.data(), n), ec);
        if (ec) {
          impl.io.stop();  // the server ended the tunnel (or it broke): so does this side
          return;
        }
        read_server();
      });
    };
    read_in();
    read_server();
    impl.io.restart();
    impl.io.run();
  };
  if (impl.tls) {
    relay(*impl.tls);
  } else {
    relay(impl.stream);
  }
  // The operations still pending end here, aborted, while what they refer to still exists.
  in.cancel(ignored);
  impl.drop();
  impl.io.restart();
  impl.io.poll();
  return answer;
}

}  // namespace gpurent::client
