// The control plane process: HTTP API + controller + store, and `gpurent dev` (the same, plus one
// node agent with simulated or real GPUs, in one process).
//
// run_server blocks until SIGINT/SIGTERM and returns the process exit code. on_ready is called once
// the listener is bound and the store is loaded, with the URL (the real port when port 0 was asked
// for) and the bootstrap admin key when this start created or fixed it.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace gpurent::server {

struct ServerOptions {
  std::string listen = "127.0.0.1:8080";  // host:port; port 0 picks a free port
  std::string data_dir = "./gpurent-data";
  // The bootstrap admin key: created on the first start (random unless given), or made valid
  // again when given explicitly (GPURENT_BOOTSTRAP_ADMIN_KEY or --admin-key).
  std::optional<std::string> admin_key;
  std::chrono::milliseconds tick_interval{1000};
  std::chrono::seconds node_heartbeat_timeout{10};
  std::string currency = "CNY";
  // Credit given to the bootstrap tenant on its first start, as a promotion transfer (dev mode
  // sets it so that `gpurent launch` works at once). 0 = none.
  long long bootstrap_credit_micros = 0;
  // The server's config file (server_config.h: alert rules, webhooks, the /metrics token); "" =
  // none.
  std::string config_path;
};

struct DevOptions {
  ServerOptions server;
  std::string sim_gpus;  // "" = real GPUs through NVML when present, else 8xh100-80g
};

struct ReadyInfo {
  std::string url;                       // "http://127.0.0.1:8080"
  std::optional<std::string> admin_key;  // shown when this start created or fixed it
  std::string data_dir;
};

int run_server(const ServerOptions& options, const std::function<void(const ReadyInfo&)>& on_ready);
int run_dev(const DevOptions& options, const std::function<void(const ReadyInfo&)>& on_ready);

}  // namespace gpurent::server
