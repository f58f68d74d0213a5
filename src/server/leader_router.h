// Where a server's HTTP requests go when several servers share one PostgreSQL store: to its own
// API while it leads, else to the leader's (a reverse proxy, net/http.h's Forwarder: bodies
// stream, WebSocket upgrades tunnel), so that clients may talk to any server. A standby answers
// only GET /healthz itself ({"status": "standby", "leader": URL}); with no leader known it answers
// 503 "no_leader" with Retry-After, and a leader it cannot reach is 502 "upstream_unavailable".
// Behind TLS (an https:// leader) it forwards nothing and answers 503 "not_leader" naming the
// leader. None of these requests reached an API, so clients may send them again, to another
// server (client/http_client.h).
//
// Thread-safety: everything on the io_context's thread (set_leader_url and lead are posted there).
#pragma once

#include <string>

#include "net/http.h"

namespace gpurent::server {

class Api;

class LeaderRouter {
 public:
  // What the HttpServer is built with: they ask this router at each request.
  net::Handler handler();
  net::Forwarder forwarder();

  // The current leader's API URL ("http://host:port"), "" when none holds the lease.
  void set_leader_url(std::string url) { leader_url_ = std::move(url); }
  // From now on requests go to `api` (this server leads).
  void lead(Api& api);

 private:
  bool standby() const { return api_ == nullptr; }
  Api* api_ = nullptr;
  net::Forwarder api_forwarder_;
  std::string leader_url_;
};

}  // namespace gpurent::server
