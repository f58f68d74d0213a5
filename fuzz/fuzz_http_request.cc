// Raw bytes as a client's side of a connection to the HTTP server (src/net/http.h), read as
// HttpServer's session reads them: Beast's parser reads a header (at most 16 KiB), the head goes
// to the forwarder's view (to_head, path_of), the body is read within max_body_bytes, and the
// message becomes a net::Request (to_request); pipelined requests follow while keep-alive holds.
//
// Invariants: nothing throws or crashes; the decoded path and query are what the target says
// (percent-decoding round-trips with common/url.h's percent_encode); RequestHead::header finds
// what Beast finds; a redirect to the request's own target (server/proxy.cc does that) gives a
// response head that Beast reads back with the same Location and nothing injected; a refusal's
// problem+json body is JSON.
//
// The conversion lives in http.cc's anonymous namespace, so this harness compiles http.cc itself
// (and does not link gpurent_net, which is that one file).
#include "net/http.cc"  // NOLINT(bugprone-suspicious-include)

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/url.h"
#include "fuzz_check.h"

namespace gpurent::net {
namespace {

using fuzz::shown;

constexpr size_t kMaxBodyBytes = 64 * 1024;  // HttpLimits' 1 MiB, smaller for the fuzzer
constexpr int kMaxPipelined = 8;

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    out.emplace_back(path.substr(start, slash - start));
    if (slash == std::string_view::npos) return out;
    start = slash + 1;
  }
}

// The decoded path and query written back as a target: each segment and each query key and
// value percent-encoded.
std::string encode_target(const std::string& path,
                          const std::map<std::string, std::string>& query) {
  std::string out;
  bool first = true;
  for (const auto& segment : split_path(path)) {
    if (!first) out += '/';
    first = false;
    out += percent_encode(segment);
  }
  char separator = '?';
  for (const auto& [key, value] : query) {
    out += separator;
    out += percent_encode(key);
    out += '=';
    out += percent_encode(value);
    separator = '&';
  }
  return out;
}

void check_target(std::string_view target, const std::string& path,
                  const std::map<std::string, std::string>& query) {
  FUZZ_CHECK(path == path_of(target), "path_of and parse_target disagree on {}", shown(target));
  const std::string_view raw_path = target.substr(0, target.find('?'));
  FUZZ_CHECK(path.size() <= raw_path.size(), "decoding {} made it longer", shown(target));
  if (raw_path.find('%') == std::string_view::npos) {
    FUZZ_CHECK(path == raw_path, "a path without escapes changed: {} -> {}", shown(target),
               shown(path));
  }
  // Percent-encoding what was decoded, then decoding it again, gives it back.
  const std::string again = encode_target(path, query);
  std::string path2;
  std::map<std::string, std::string> query2;
  parse_target(again, &path2, &query2);
  FUZZ_CHECK(path2 == path, "path {} re-encoded as {} decodes to {}", shown(path), shown(again),
             shown(path2));
  FUZZ_CHECK(query2 == query, "the query of {} re-encoded as {} decodes otherwise", shown(target),
             shown(again));
}

void check_head(const http::request<http::empty_body>& message) {
  const RequestHead head = to_head(message);
  FUZZ_CHECK(head.method == message.method_string(), "method {}", shown(head.method));
  FUZZ_CHECK(head.target == message.target(), "target {}", shown(head.target));
  check_target(head.target, head.path, head.query);
  size_t fields = 0;
  for (const auto& field : message) {
    ++fields;
    // The first field of that name, case-insensitively, as Beast finds it.
    FUZZ_CHECK(head.header(field.name_string()) == message[field.name_string()],
               "header {} is {} here, {} to Beast", shown(field.name_string()),
               shown(head.header(field.name_string())), shown(message[field.name_string()]));
  }
  FUZZ_CHECK(head.headers.size() == fields, "{} headers of {}", head.headers.size(), fields);
}

// The answer to a request that cannot be read: problem+json, as HttpServer::refuse sends it.
void check_refusal(const beast::error_code& ec) {
  const Response response = problem_response(Error::invalid("malformed_request", ec.message()));
  FUZZ_CHECK(response.status == 400, "status {}", response.status);
  const Json body = Json::parse(response.body, nullptr, false);
  FUZZ_CHECK(body.is_object() && body.value("code", "") == "malformed_request", "body {}",
             shown(response.body));
}

// A redirect to the request's own target (TenantProxy's 308 to "<target>/" does that), read back.
void check_redirect(const Request& request, std::string_view target, unsigned version,
                    bool keep_alive, uint8_t knob) {
  Response response{301 + knob % 8, "text/plain; charset=utf-8", request.method, {}, {}};
  response.headers.emplace_back("Location", std::string(target) + "/");
  if (knob & 0x80) response.headers.emplace_back("Set-Cookie", "s=" + request.idempotency_key);
  const std::string head = simple_response_head(response, version, keep_alive);
  const std::string wire = head + response.body.substr(0, sent_body_bytes(response));
  http::response_parser<http::string_body> parser;
  parser.eager(true);
  beast::error_code ec;
  const size_t used = parser.put(asio::buffer(wire), ec);
  if (!ec && !parser.is_done()) parser.put_eof(ec);
  FUZZ_CHECK(!ec, "Beast cannot read the response head it was given ({}): {}", ec.message(),
             shown(head));
  FUZZ_CHECK(used == wire.size(), "{} of {} bytes of the response read", used, wire.size());
  const auto& message = parser.get();
  FUZZ_CHECK(message.result_int() == static_cast<unsigned>(response.status), "status {}",
             message.result_int());
  FUZZ_CHECK(message[http::field::location] == std::string(target) + "/", "Location {} for {}",
             shown(message[http::field::location]), shown(target));
  FUZZ_CHECK(message.body() == response.body.substr(0, sent_body_bytes(response)), "body {}",
             shown(message.body()));
  size_t fields = 0;
  for ([[maybe_unused]] const auto& field : message) ++fields;
  // Server, Content-Type, Location, [Set-Cookie], [Connection], Content-Length.
  const size_t expected = 4 + ((knob & 0x80) ? 1 : 0) +
                          ((version >= 11 && !keep_alive) || (version < 11 && keep_alive) ? 1 : 0);
  FUZZ_CHECK(fields == expected, "{} header fields, not {}: {}", fields, expected, shown(head));
}

// One request from the front of `bytes`; returns the bytes it used, or 0 to stop (the connection
// would be closed: end of input, an error answered by a refusal, or no keep-alive).
size_t read_one(std::string_view bytes, uint8_t knob) {
  beast::error_code ec;
  http::request_parser<http::empty_body> head_parser;
  head_parser.header_limit(16 * 1024);
  head_parser.body_limit(kUnlimited);
  size_t used = head_parser.put(asio::buffer(bytes.data(), bytes.size()), ec);
  if (ec == http::error::need_more) return 0;  // the connection ends mid-header
  if (ec) {
    check_refusal(ec);
    return 0;
  }
  FUZZ_CHECK(head_parser.is_header_done(), "the header is not done after {} bytes", used);
  check_head(head_parser.get());
  if (head_parser.content_length() && *head_parser.content_length() > kMaxBodyBytes) return 0;

  http::request_parser<http::string_body> parser{std::move(head_parser)};
  parser.body_limit(kMaxBodyBytes);
  parser.eager(true);
  while (!parser.is_done()) {
    const std::string_view rest = bytes.substr(used);
    if (rest.empty()) {
      if (!parser.need_eof()) return 0;  // cut short: the session sees the end of the stream
      parser.put_eof(ec);
      if (ec) return 0;
      break;
    }
    const size_t n = parser.put(asio::buffer(rest.data(), rest.size()), ec);
    used += n;
    if (ec == http::error::need_more) {
      if (n == 0) return 0;
      continue;
    }
    if (ec) {
      if (ec != http::error::body_limit) check_refusal(ec);
      return 0;
    }
    if (n == 0) return 0;
  }
  const bool keep_alive = parser.get().keep_alive();
  const unsigned version = parser.get().version();
  const std::string target(parser.get().target());
  const std::string method(parser.get().method_string());
  const size_t body_size = parser.get().body().size();
  FUZZ_CHECK(body_size <= kMaxBodyBytes, "a body of {} bytes", body_size);
  const Request request = to_request(parser.release());
  FUZZ_CHECK(request.method == method, "method {} became {}", shown(method), shown(request.method));
  FUZZ_CHECK(request.body.size() == body_size, "body of {} bytes became {}", body_size,
             request.body.size());
  check_target(target, request.path, request.query);
  check_redirect(request, target, version, keep_alive, knob);
  return keep_alive ? used : 0;
}

}  // namespace
}  // namespace gpurent::net

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpurent::fuzz::Input input(data, size);
  const uint8_t knob = input.byte();
  std::string_view bytes = input.rest();
  for (int i = 0; i < gpurent::net::kMaxPipelined && !bytes.empty(); ++i) {
    const size_t used = gpurent::net::read_one(bytes, knob);
    if (used == 0) break;
    bytes.remove_prefix(used);
  }
  return 0;
}
