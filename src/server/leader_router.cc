#include "server/leader_router.h"

#include <fmt/format.h>

#include "common/json.h"
#include "server/api.h"

namespace gpurent::server {
namespace {

bool is_health_check(std::string_view method, std::string_view path) {
  return method == "GET" && path == "/healthz";
}

// "http://host:port" as the forwarder's host and port; nullopt for anything else.
std::optional<std::pair<std::string, uint16_t>> host_and_port(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) return std::nullopt;
  url.remove_prefix(kScheme.size());
  const size_t colon = url.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string host(url.substr(0, colon));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = 0;
  for (const char c : url.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) return std::nullopt;
    port = port * 10 + (c - '0');
  }
  if (port == 0 || port > 65535) return std::nullopt;
  return std::pair{std::move(host), static_cast<uint16_t>(port)};
}

net::Response no_leader() {
  net::Response response = net::problem_response(
      {ErrorKind::kUnavailable, "no_leader",
       "no server leads the control plane at the moment (a failover is under way): try again"});
  response.headers.emplace_back("Retry-After", "1");
  return response;
}

// Behind TLS a standby does not forward: the leader would see the standby, not the client (its
// address, its client certificate). Clients given every server's URL move on to the next.
net::Response not_the_leader(const std::string& leader_url) {
  return net::problem_response({ErrorKind::kUnavailable, "not_leader",
                                fmt::format("this server stands by: send the request to the "
                                            "leader, {}",
                                            leader_url)});
}

}  // namespace

void LeaderRouter::lead(Api& api) {
  api_forwarder_ = api.forwarder();
  api_ = &api;
}

net::Handler LeaderRouter::handler() {
  return [this](net::Request request) -> asio::awaitable<net::Response> {
    if (!standby()) co_return co_await api_->handle(std::move(request));
    // Only the health check is not forwarded (forwarder()).
    Json body = {{"status", "standby"}, {"leader", leader_url_}};
    co_return net::Response{200, "application/json", body.dump(), {}, {}};
  };
}

net::Forwarder LeaderRouter::forwarder() {
  return {.claims =
              [this](std::string_view method, std::string_view path) {
                if (standby()) return !is_health_check(method, path);
                return api_forwarder_.claims && api_forwarder_.claims(method, path);
              },
          .decide = [this](net::RequestHead head) -> asio::awaitable<net::ForwardDecision> {
            if (!standby()) co_return co_await api_forwarder_.decide(std::move(head));
            if (leader_url_.starts_with("https://")) co_return not_the_leader(leader_url_);
            const auto leader = host_and_port(leader_url_);
            if (!leader) co_return no_leader();
            co_return net::ForwardTo{
                .host = leader->first, .port = leader->second, .target = head.target};
          }};
}

}  // namespace gpurent::server
