// The small pieces of HTTP that every API route uses: JSON answers, query parameters, the
// Authorization and Idempotency-Key headers. Bad input is an Error naming the parameter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/json.h"
#include "common/result.h"
#include "net/http.h"

namespace gpurent::server {

using net::problem_response;
using net::Request;
using net::Response;

// A list that is returned whole (no further pages).
Json whole_list(Json items);

// `body` as application/json.
Response json_response(int status, const Json& body);

// A 401 saying what credential to send.
Error unauthenticated(std::string_view why);

// The token of "Authorization: Bearer <token>"; none when absent, empty or over 256 bytes.
std::optional<std::string_view> bearer_token(const Request& request);

// The integer query parameter `name` in [min, max]; absent or empty is `fallback`, anything else
// a 400 invalid_query.
Result<int64_t> query_int(const Request& request, const std::string& name, int64_t fallback,
                          int64_t min, int64_t max);

// The query parameter `name`; none when absent or empty.
std::optional<std::string> query_string(const Request& request, const std::string& name);

// The Idempotency-Key header, if any; at most 128 characters.
Result<std::optional<std::string>> idempotency_key(const Request& request);

// The result's view(value) as JSON with `status`, or its error as a problem.
template <class T>
Response result_response(int status, const Result<T>& result, auto&& view) {
  if (!result) return problem_response(result.error());
  return json_response(status, view(*result));
}

// A 201 for a created object, with its Location; an Idempotency-Key replay says that it is one.
Response created_response(const Json& view, std::string location, bool replayed);

// "1"/"true" or "0"/"false"; absent is `fallback`.
Result<bool> query_flag(const Request& request, const std::string& name, bool fallback);

}  // namespace gpurent::server
