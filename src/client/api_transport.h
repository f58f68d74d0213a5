// What every group of the SDK (client/api_client.h) shares, kept in one place: the connection (one
// HttpClient, one keep-alive connection) and the API key it sends, the deadline of each call, the
// mapping of a non-2xx answer to an Error (error_from_response), and the paging of list routes.
// Internal to src/client: callers reach it only through ApiClient and its groups.
//
// Not thread-safe, as the HttpClient it owns.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "client/api_client.h"
#include "client/http_client.h"
#include "common/json.h"

namespace gpurent::client {

class ApiTransport {
 public:
  // An empty api_key sends no Authorization header.
  ApiTransport(HttpClient http, std::string api_key)
      : http_(std::move(http)), api_key_(std::move(api_key)) {}

  const std::string& base_url() const { return http_.base_url(); }

  // Sends a JSON request (body, when given, as its JSON) and reads the 2xx answer's JSON object
  // (an empty body: an empty object). A non-2xx answer becomes error_from_response's Error, a body
  // that is no JSON object an Error "bad_response".
  Result<Json> call(std::string_view method, std::string target, const Json* body = nullptr,
                    std::string_view idempotency_key = {},
                    std::chrono::seconds timeout = kCallTimeout);
  // GETs every page of a list route (kMaxListPages at most; "list_too_long" beyond); returns the
  // first page's object with all items joined and next_cursor null. query: "" or "a=1&b=2".
  Result<Json> fetch_all_pages(std::string_view path, const std::string& query = {});
  // The joined items of fetch_all_pages.
  Result<Json> list_items(std::string_view path, const std::string& query = {});
  // GETs a text stream (a log) and hands it to on_chunk; each piece may take kCallTimeout, or
  // with follow kFollowIdleTimeout.
  Status stream_text(std::string target, bool follow,
                     const std::function<bool(std::string_view)>& on_chunk);

  // The HttpClient's send and stream with the Authorization header added, for the routes that are
  // no JSON call (upload pieces, exec): the caller reads the answer.
  Result<HttpResponse> send(HttpRequest request, std::chrono::milliseconds timeout);
  Result<HttpResponse> stream(HttpRequest request,
                              const std::function<bool(std::string_view)>& on_chunk,
                              std::chrono::milliseconds idle_timeout);
  Result<HttpResponse> tunnel(HttpRequest request, int in_fd, int out_fd);

 private:
  void authorize(HttpRequest& request) const;

  HttpClient http_;
  std::string api_key_;
};

// Helpers of the groups' requests and answers.
namespace detail {

// An id or cursor put in a path or query, percent-encoded: it can never change their shape.
std::string encode(std::string_view text);
// Appends key=value (value encoded) to a query, with '&' after what is there; nothing when the
// value is empty.
void add_query(std::string& query, std::string_view key, std::string_view value);
// The string member of an object; "" when it is missing or no string.
std::string string_field(const Json& object, std::string_view key);
// An Error "bad_response" (kInternal): `request` answered something unreadable, and why.
Error bad_response(std::string_view request, std::string_view why);

}  // namespace detail
}  // namespace gpurent::client
