// HTTP/1.1 for C++20 coroutines on a Boost.Asio io_context: for a process that keeps thousands of
// calls in flight on one thread (the simulated fleet, agent/sim_fleet.h), where the blocking
// HttpClient (http_client.h) would need a thread per call. http:// only.
//
// ResolvedServer: a base URL (http_wire.h's grammar) resolved once, with the options below; many
// connections share it (thousands must not resolve each). AsyncHttpConnection: one keep-alive
// connection, opened at the first call and again after the server closed it. AsyncHttpPool: a
// fixed set of connections, each call waiting in turn (first come, first served) for an idle one.
//
// Requests, answers and errors are HttpClient's: transport failures are Errors of kind
// kUnavailable, code "connection_failed" or "timeout"; any HTTP status, 4xx and 5xx included, is
// an answer for the caller to judge; check_request()'s "invalid_request" for a request it refuses.
// After close(), the call in progress and every later one fail with kUnavailable
// "connection_closed".
//
// Deadlines: send()'s timeout bounds connecting, and then writing the request and reading the
// whole answer together; stream()'s bounds connecting, writing, and then each wait for a piece.
// Retry rule: a request goes out a second time, once, on a fresh connection, only when the
// kept-alive connection it was given broke before a byte of an answer arrived (never after a
// timeout): any request after a failed write; after that, GET and HEAD only (as HttpClient),
// or any request with AsyncHttpOptions::repeatable (a protocol whose every message may be
// repeated, as the agent protocol's may: model/agent_protocol.h).
// Bounds: send() reads at most kMaxResponseBodyBytes of body (beyond: HttpClient's Error
// "response_too_large"); stream() has no total bound, on_piece sees each piece as it is parsed.
//
// Threads: every object here belongs to the io_context's one thread; none is thread-safe. The
// ResolvedServer must outlive its connections and pools, and the io_context every one of them.
#pragma once

#include <utility>  // before Asio: Boost 1.74 with C++20 coroutines needs it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "client/http_client.h"
#include "common/result.h"

namespace gpurent::client {

struct AsyncHttpOptions {
  std::string user_agent = "gpurent-client";
  // Every request may be sent twice (see the retry rule above).
  bool repeatable = false;
};

class ResolvedServer {
 public:
  // Errors: "invalid_url" (parse_base_url's, and for a URL that is not http://); kUnavailable
  // "connection_failed" when the host does not resolve.
  static Result<ResolvedServer> resolve(std::string_view base_url, AsyncHttpOptions options = {});

  const std::string& base_url() const { return base_url_; }

 private:
  friend class AsyncHttpConnection;
  struct Endpoints;
  ResolvedServer() = default;

  std::string base_url_;   // "http://host:port", for messages
  std::string authority_;  // the Host header
  AsyncHttpOptions options_;
  std::shared_ptr<const Endpoints> endpoints_;
};

class AsyncHttpConnection {
 public:
  AsyncHttpConnection(boost::asio::io_context& io, const ResolvedServer& server);
  ~AsyncHttpConnection();
  AsyncHttpConnection(const AsyncHttpConnection&) = delete;
  AsyncHttpConnection& operator=(const AsyncHttpConnection&) = delete;

  // The answer, read whole. One call at a time.
  boost::asio::awaitable<Result<HttpResponse>> send(const HttpRequest& request,
                                                    std::chrono::milliseconds timeout);

  // Hands the answer's chunked body to on_piece as it arrives, until on_piece returns false (the
  // connection is then closed, and the answer has the status only) or the body ends. An answer
  // that is not chunked (an error document) comes back whole, as from send(), and on_piece never
  // sees it. One call at a time.
  boost::asio::awaitable<Result<HttpResponse>> stream(
      const HttpRequest& request, std::chrono::milliseconds idle,
      const std::function<bool(std::string_view)>& on_piece);

  // For good: see above.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class AsyncHttpPool {
 public:
  AsyncHttpPool(boost::asio::io_context& io, const ResolvedServer& server, size_t size);
  ~AsyncHttpPool();
  AsyncHttpPool(const AsyncHttpPool&) = delete;
  AsyncHttpPool& operator=(const AsyncHttpPool&) = delete;

  // send() on the connection that has been idle longest, once one is. Any number of calls at once:
  // each waits in its own coroutine frame, so the callers bound the queue.
  boost::asio::awaitable<Result<HttpResponse>> send(const HttpRequest& request,
                                                    std::chrono::milliseconds timeout);

  // Closes every connection (see above) and ends the calls still waiting for one.
  void close();

 private:
  struct Waiter;
  void release(AsyncHttpConnection* connection);

  boost::asio::io_context& io_;
  const ResolvedServer& server_;
  std::vector<std::unique_ptr<AsyncHttpConnection>> all_;
  // Lent in turn, the longest idle first: every connection is opened while the load is calm (a
  // fleet's periodic reports), not all at once when a burst of new work needs them.
  std::deque<AsyncHttpConnection*> idle_;
  std::deque<Waiter*> waiters_;  // each lives in its send() frame until woken
  bool closed_ = false;
};

}  // namespace gpurent::client
