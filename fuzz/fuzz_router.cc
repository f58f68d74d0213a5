// The server's routing of a decoded request path: net::Router (src/net/router.h) holding every
// (method, path) of docs/openapi.json, which the server's route table equals (server/openapi_test),
// and the service paths (/i/<id>/<service>/..., model/service_path.h) that the proxy claims.
//
// Two kinds of input, by the first byte:
//   - a method, a space, and a path of arbitrary bytes;
//   - a route of the table (by index), its parameters filled with arbitrary values.
// Invariants: nothing throws; every answer is what a second, independent matcher (the one below)
// says, first added route first (a match, 405 when only other methods match, else 404); a match
// is under the method asked, and its parameters put back in its pattern give the path's segments;
// a route's own pattern filled with parameters that hold no '/' always matches. A service path
// that parses gives back its parts through service_base_url.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/openapi_document.h"
#include "common/json.h"
#include "fuzz_check.h"
#include "model/instance.h"
#include "model/service_path.h"
#include "net/router.h"

namespace gpurent {
namespace {

using fuzz::shown;

struct Route {
  std::string method;
  std::string pattern;
};

struct Table {
  std::vector<Route> routes;
  net::Router<size_t> router;  // the handler is the route's index
};

const Table& table() {
  static const Table table = [] {
    Table out;
    const Json document = Json::parse(embedded::openapi_document());
    for (const auto& [path, operations] : document.at("paths").items()) {
      for (const auto& [method, operation] : operations.items()) {
        if (method == "parameters") continue;
        std::string upper;
        for (const char c : method) upper += static_cast<char>(c - 'a' + 'A');
        out.router.add(upper, path, out.routes.size());
        out.routes.push_back({upper, path});
      }
    }
    FUZZ_CHECK(out.routes.size() > 50, "only {} routes in the OpenAPI document", out.routes.size());
    return out;
  }();
  return table;
}

// The independent matcher: walks the path's text against the pattern's, a segment at a time,
// where runs of '/' separate segments and none is empty. Fills params on a match.
bool matches(std::string_view pattern, std::string_view path, net::PathParams& params) {
  const auto next_segment = [](std::string_view& text) {
    while (!text.empty() && text.front() == '/') text.remove_prefix(1);
    const size_t end = std::min(text.find('/'), text.size());
    const std::string_view segment = text.substr(0, end);
    text.remove_prefix(end);
    return segment;
  };
  while (true) {
    const std::string_view want = next_segment(pattern);
    const std::string_view have = next_segment(path);
    if (want.empty() || have.empty()) return want.empty() && have.empty();
    if (want.size() > 2 && want.front() == '{' && want.back() == '}') {
      params.emplace(std::string(want.substr(1, want.size() - 2)), std::string(have));
    } else if (want != have) {
      return false;
    }
  }
}

enum class Outcome { kMatch, kMethodNotAllowed, kNotFound };

struct Expected {
  Outcome outcome = Outcome::kNotFound;
  size_t index = 0;
  net::PathParams params;
};

Expected expected_match(std::string_view method, std::string_view path) {
  Expected out;
  for (size_t i = 0; i < table().routes.size(); ++i) {
    net::PathParams params;
    if (!matches(table().routes[i].pattern, path, params)) continue;
    if (table().routes[i].method == method) return {Outcome::kMatch, i, std::move(params)};
    out.outcome = Outcome::kMethodNotAllowed;
  }
  return out;
}

// The path's segments: what a match's parameters, put back in its pattern, must give.
std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < path.size()) {
    const size_t slash = std::min(path.find('/', start), path.size());
    if (slash > start) out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

void check_match(std::string_view method, std::string_view path) {
  const auto match = table().router.match(method, path);
  const Expected expected = expected_match(method, path);
  if (!match) {
    const ErrorKind kind = expected.outcome == Outcome::kMethodNotAllowed
                               ? ErrorKind::kMethodNotAllowed
                               : ErrorKind::kNotFound;
    FUZZ_CHECK(expected.outcome != Outcome::kMatch, "{} {} matches {} but the router says {}",
               shown(method), shown(path), table().routes[expected.index].pattern,
               match.error().message);
    FUZZ_CHECK(match.error().kind == kind, "{} {}: {} ({})", shown(method), shown(path),
               match.error().code, match.error().message);
    return;
  }
  FUZZ_CHECK(match->handler != nullptr, "a match without a handler");
  const size_t index = *match->handler;
  FUZZ_CHECK(index < table().routes.size(), "handler {}", index);
  const Route& route = table().routes[index];
  FUZZ_CHECK(expected.outcome == Outcome::kMatch && expected.index == index,
             "{} {} matched {} {}; expected {}", shown(method), shown(path), route.method,
             route.pattern,
             expected.outcome == Outcome::kMatch ? table().routes[expected.index].pattern
                                                 : std::string("no match"));
  FUZZ_CHECK(route.method == method && match->pattern == route.pattern, "{} {} for {} {}",
             route.method, route.pattern, shown(method), shown(path));
  FUZZ_CHECK(match->params == expected.params, "parameters of {} in {}", shown(path),
             route.pattern);
  // The parameters put back in the pattern give the path's segments.
  const auto have = segments(path);
  const auto want = segments(route.pattern);
  FUZZ_CHECK(have.size() == want.size(), "{} segments in {}, {} in {}", have.size(), shown(path),
             want.size(), route.pattern);
  for (size_t i = 0; i < want.size(); ++i) {
    std::string_view filled = want[i];
    if (filled.size() > 2 && filled.front() == '{' && filled.back() == '}') {
      const auto param = match->params.find(filled.substr(1, filled.size() - 2));
      FUZZ_CHECK(param != match->params.end(), "parameter {} of {} missing", filled, route.pattern);
      filled = param->second;
    }
    FUZZ_CHECK(filled == have[i], "segment {} of {}: {} in the pattern", i, shown(path),
               shown(filled));
  }
}

void check_service_path(std::string_view path) {
  const auto parsed = model::parse_service_path(path);
  if (!parsed) {
    FUZZ_CHECK(parsed.error().kind == ErrorKind::kNotFound, "{}: {}", shown(path),
               parsed.error().message);
    return;
  }
  FUZZ_CHECK(path.starts_with(model::kServicePathPrefix), "{}", shown(path));
  FUZZ_CHECK(!parsed->instance_id.empty() && model::valid_service_name(parsed->service),
             "{} gave instance {} service {}", shown(path), shown(parsed->instance_id),
             shown(parsed->service));
  const std::string base = model::service_base_url(parsed->instance_id, parsed->service);
  if (parsed->needs_slash) {
    FUZZ_CHECK(std::string(path) + "/" == base, "{} needs a slash but its base is {}", shown(path),
               shown(base));
  } else {
    FUZZ_CHECK(path.starts_with(base), "{} is not under its base {}", shown(path), shown(base));
  }
  const auto again = model::parse_service_path(base);
  FUZZ_CHECK(again && again->instance_id == parsed->instance_id &&
                 again->service == parsed->service && !again->needs_slash,
             "the base {} of {} does not parse back", shown(base), shown(path));
}

// Route `index` with its parameters filled from `values` (separated by '\n'; no '/' in any).
void check_filled_route(size_t index, std::string_view values, uint8_t knob) {
  const Route& route = table().routes[index];
  std::string path;
  size_t start = 0;
  while (start < route.pattern.size()) {
    const size_t slash = std::min(route.pattern.find('/', start), route.pattern.size());
    if (slash > start) {
      const std::string_view part = std::string_view(route.pattern).substr(start, slash - start);
      path += (knob & 1) ? "//" : "/";
      if (part.size() > 2 && part.front() == '{' && part.back() == '}') {
        std::string value;
        for (const char c : values.substr(0, values.find('\n'))) {
          if (c != '/') value += c;
        }
        values.remove_prefix(std::min(values.size(), values.find('\n') + 1));
        path += value.empty() ? "x" : value;
      } else {
        path += part;
      }
    }
    start = slash + 1;
  }
  if (knob & 2) path += '/';
  check_match(route.method, path);
  const auto match = table().router.match(route.method, path);
  FUZZ_CHECK(match.has_value(), "{} {} (route {}) does not match: {}", route.method, shown(path),
             route.pattern, match.error().message);
  FUZZ_CHECK(*match->handler <= index, "{} matched the later route {}", shown(path),
             table().routes[*match->handler].pattern);
}

}  // namespace
}  // namespace gpurent

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpurent;
  fuzz::Input input(data, size);
  const uint8_t mode = input.byte();
  if (mode & 0x80) {
    const size_t index = input.byte() % table().routes.size();
    check_filled_route(index, input.rest(), mode);
    return 0;
  }
  const std::string_view method = input.until(' ');
  const std::string_view path = input.rest();
  check_match(method, path);
  check_service_path(path);
  return 0;
}
