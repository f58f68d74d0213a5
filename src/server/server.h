// The control plane process: HTTP API + controller + store. `gpurent dev` (cli) runs the same with
// a local node: a hook that starts a node agent in the process once the server listens.
//
// run_server blocks until SIGINT/SIGTERM and returns the process exit code. on_ready is called once
// the listener is bound, the store is loaded and the local node (if any) started, with the URL
// (the real port when port 0 was asked for) and the bootstrap admin key when this start created or
// fixed it.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "common/result.h"

namespace gpurent::server {

struct ServerOptions {
  std::string listen = "127.0.0.1:8080";  // host:port; port 0 picks a free port
  std::string data_dir = "./gpurent-data";
  // Where the state lives: "" = the SQLite file in data_dir (or the config file's [store] url);
  // "postgres://..." = a PostgreSQL database that several servers may share: one leads, the
  // others stand by, forward requests to it, and take over when its lease lapses.
  std::string store;
  // How the other servers reach this one's API (they forward to the leader): "" = the URL it
  // listens on, which must then be reachable from them.
  std::string advertise_url;
  // A leader's lease of a shared store: a leader whose lease ran out this long unrenewed (a
  // paused or cut-off process) is replaced. It renews every third of it.
  std::chrono::milliseconds lease_ttl{3'000};
  // The bootstrap admin key: created on the first start (random unless given), or made valid
  // again when given explicitly (GPURENT_BOOTSTRAP_ADMIN_KEY or --admin-key).
  std::optional<std::string> admin_key;
  std::chrono::milliseconds tick_interval{1000};
  std::chrono::seconds node_heartbeat_timeout{10};
  std::string currency = "CNY";
  // Credit given to the bootstrap tenant on its first start, as a promotion transfer (dev mode
  // sets it so that `gpurent launch` works at once). 0 = none.
  long long bootstrap_credit_micros = 0;
  // Sell the sample package product the README buys (h100-100h) when none is defined (`gpurent
  // dev` sets it, so that the example works as written).
  bool sample_package = false;
  // The server's config file (server_config.h: alert rules, webhooks, the /metrics token); "" =
  // none.
  std::string config_path;
};

// A node run in the server's process (`gpurent dev`'s agent). start() is called once the server
// listens, with its URL and a join token made for this node (valid 10 minutes); it returns how to
// stop the node, which is called before the server shuts down.
struct LocalNode {
  std::function<Result<std::function<void()>>(const std::string& url,
                                              const std::string& join_token)>
      start;
};

struct ReadyInfo {
  std::string url;                       // "http://127.0.0.1:8080"
  std::optional<std::string> admin_key;  // shown when this start created or fixed it
  std::string data_dir;
};

int run_server(const ServerOptions& options, const std::function<void(const ReadyInfo&)>& on_ready,
               const LocalNode* local_node = nullptr);

}  // namespace gpurent::server
