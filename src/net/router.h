// Routes "/v1/instances/{id}/stop"-style patterns to handlers. A path that matches a pattern under
// another method is a 405; one that matches nothing is a 404.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpurent::net {

using PathParams = std::map<std::string, std::string, std::less<>>;

template <class Handler>
class Router {
 public:
  struct Match {
    const Handler* handler = nullptr;
    PathParams params;
    std::string_view pattern;  // the route's, e.g. "/v1/instances/{id}" (lives as the router)
  };

  void add(std::string method, std::string pattern, Handler handler) {
    routes_.push_back({std::move(method), split(pattern), std::move(pattern), std::move(handler)});
  }

  Result<Match> match(std::string_view method, std::string_view path) const {
    const auto segments = split(path);
    bool path_known = false;
    for (const auto& route : routes_) {
      PathParams params;
      if (!matches(route.segments, segments, params)) continue;
      path_known = true;
      if (route.method == method) return Match{&route.handler, std::move(params), route.pattern};
    }
    if (path_known) {
      return fail(Error{ErrorKind::kMethodNotAllowed, "method_not_allowed",
                        fmt::format("{} is not allowed on {}", method, path)});
    }
    return fail(Error{ErrorKind::kNotFound, "route_not_found", fmt::format("no route {}", path)});
  }

  // (method, pattern) of every route, for the OpenAPI consistency test.
  std::vector<std::pair<std::string, std::string>> table() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& route : routes_) out.emplace_back(route.method, route.pattern);
    return out;
  }

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;
    std::string pattern;
    Handler handler;
  };

  static std::vector<std::string> split(std::string_view path) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < path.size()) {
      size_t slash = path.find('/', start);
      if (slash == std::string_view::npos) slash = path.size();
      if (slash > start) out.emplace_back(path.substr(start, slash - start));
      start = slash + 1;
    }
    return out;
  }

  static bool matches(const std::vector<std::string>& pattern,
                      const std::vector<std::string>& segments, PathParams& params) {
    if (pattern.size() != segments.size()) return false;
    for (size_t i = 0; i < pattern.size(); ++i) {
      const auto& p = pattern[i];
      if (p.size() > 2 && p.front() == '{' && p.back() == '}') {
        params.emplace(p.substr(1, p.size() - 2), segments[i]);
      } else if (p != segments[i]) {
        return false;
      }
    }
    return true;
  }

  std::vector<Route> routes_;
};

}  // namespace gpurent::net
