// Errors as values.
//
// Every fallible function in gpurent returns Result<T> (std::expected<T, Error>). An Error carries
// a kind (which maps to one HTTP status), a stable machine-readable code ("unknown_gpu_type") that
// clients may branch on, and a human-readable message. Exceptions never cross module boundaries:
// code that calls a throwing library catches at the call site and converts to an Error.
#pragma once

#include <expected>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace gpurent {

enum class ErrorKind {
  kInvalidArgument,   // 400: malformed or invalid input
  kUnauthenticated,   // 401: missing or unknown credentials
  kPaymentRequired,   // 402: the balance does not cover the request
  kPermissionDenied,  // 403: authenticated, but the role may not do this
  kNotFound,          // 404: unknown object, or one the caller may not see
  kMethodNotAllowed,  // 405
  kConflict,          // 409: the object's state does not allow the operation
  kPayloadTooLarge,   // 413
  kUnprocessable,     // 422: well-formed, but names something that cannot be satisfied
  kTooManyRequests,   // 429: over a rate limit; retry later
  kUnavailable,       // 503: try again later
  kInternal,          // 500: a bug or an I/O failure
};

int http_status(ErrorKind kind);
std::string_view error_kind_title(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::kInternal;
  std::string code;     // stable, snake_case; part of the API contract
  std::string message;  // for humans; may change between versions

  static Error invalid(std::string code, std::string message) {
    return {ErrorKind::kInvalidArgument, std::move(code), std::move(message)};
  }
  static Error not_found(std::string_view what, std::string_view id) {
    return {ErrorKind::kNotFound, fmt::format("{}_not_found", what),
            fmt::format("{} '{}' does not exist", what, id)};
  }
  static Error conflict(std::string code, std::string message) {
    return {ErrorKind::kConflict, std::move(code), std::move(message)};
  }
  static Error unprocessable(std::string code, std::string message) {
    return {ErrorKind::kUnprocessable, std::move(code), std::move(message)};
  }
  static Error internal(std::string message) {
    return {ErrorKind::kInternal, "internal", std::move(message)};
  }
};

template <class T>
using Result = std::expected<T, Error>;
using Status = std::expected<void, Error>;

inline std::unexpected<Error> fail(Error error) { return std::unexpected<Error>(std::move(error)); }

}  // namespace gpurent

// Propagates the error of a Result-returning expression, or yields its value.
#define GPURENT_TRY(var, expr)                                                  \
  auto var##_result_ = (expr);                                                  \
  if (!var##_result_) return ::gpurent::fail(std::move(var##_result_).error()); \
  auto var = std::move(*var##_result_)

// Propagates the error of a Status-returning expression.
#define GPURENT_CHECK(expr)                                     \
  do {                                                          \
    if (auto check_status_ = (expr); !check_status_)            \
      return ::gpurent::fail(std::move(check_status_).error()); \
  } while (0)
