#include "common/result.h"

namespace gpurent {

int http_status(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return 400;
    case ErrorKind::kUnauthenticated:
      return 401;
    case ErrorKind::kPaymentRequired:
      return 402;
    case ErrorKind::kPermissionDenied:
      return 403;
    case ErrorKind::kNotFound:
      return 404;
    case ErrorKind::kMethodNotAllowed:
      return 405;
    case ErrorKind::kConflict:
      return 409;
    case ErrorKind::kPayloadTooLarge:
      return 413;
    case ErrorKind::kUnprocessable:
      return 422;
    case ErrorKind::kTooManyRequests:
      return 429;
    case ErrorKind::kUnavailable:
      return 503;
    case ErrorKind::kInternal:
      return 500;
  }
  return 500;
}

std::string_view error_kind_title(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return "Bad Request";
    case ErrorKind::kUnauthenticated:
      return "Unauthorized";
    case ErrorKind::kPaymentRequired:
      return "Payment Required";
    case ErrorKind::kPermissionDenied:
      return "Forbidden";
    case ErrorKind::kNotFound:
      return "Not Found";
    case ErrorKind::kMethodNotAllowed:
      return "Method Not Allowed";
    case ErrorKind::kConflict:
      return "Conflict";
    case ErrorKind::kPayloadTooLarge:
      return "Payload Too Large";
    case ErrorKind::kUnprocessable:
      return "Unprocessable Content";
    case ErrorKind::kTooManyRequests:
      return "Too Many Requests";
    case ErrorKind::kUnavailable:
      return "Service Unavailable";
    case ErrorKind::kInternal:
      return "Internal Server Error";
  }
  return "Internal Server Error";
}

}  // namespace gpurent
