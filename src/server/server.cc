#include "server/server.h"

#include <unistd.h>

#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include "common/heap_headroom.h"
#include "common/random.h"
#include "common/secret_box.h"
#include "common/threads.h"
#include "net/tls.h"
#include "server/api.h"
#include "server/leader_router.h"
#include "server/server_config.h"
#include "server/telemetry_ingest.h"
#include "server/upload_store.h"
#include "server/webhooks.h"
#include "store/postgres/leader_lease.h"
#include "store/store.h"

namespace gpurent::server {

namespace {

struct ListenAddress {
  std::string host;
  uint16_t port = 0;
};

Result<ListenAddress> parse_listen(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return fail(
        Error::invalid("invalid_listen_address", fmt::format("'{}' is not HOST:PORT", text)));
  }
  ListenAddress address;
  address.host = text.substr(0, colon);
  if (address.host.empty()) address.host = "0.0.0.0";
  if (address.host.size() > 2 && address.host.front() == '[' && address.host.back() == ']') {
    address.host = address.host.substr(1, address.host.size() - 2);
  }
  const std::string port = text.substr(colon + 1);
  try {  // std::stoi reports bad input by throwing
    const int value = std::stoi(port);
    if (value < 0 || value > 65535 || std::to_string(value) != port) throw std::out_of_range(port);
    address.port = static_cast<uint16_t>(value);
  } catch (const std::exception&) {
    return fail(Error::invalid("invalid_listen_address", fmt::format("'{}' is not a port", port)));
  }
  return address;
}

// Blocks SIGINT, SIGTERM and SIGHUP in this thread and every thread started after it, so that
// the main thread can wait for them with sigwait: the first two to shut down in order, the last
// to reload (wait_for_stop).
sigset_t block_server_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// Waits for SIGINT or SIGTERM, at most `timeout` when given; each SIGHUP meanwhile calls
// on_hangup. Whether a stop signal came.
bool wait_for_stop(const sigset_t& signals, const std::function<void()>& on_hangup,
                   const timespec* timeout = nullptr) {
  for (;;) {
    const int signal =
        timeout ? sigtimedwait(&signals, nullptr, timeout) : sigwaitinfo(&signals, nullptr);
    if (signal == SIGHUP) {
      on_hangup();
      if (timeout) return false;
      continue;
    }
    if (signal > 0) {
      spdlog::info("received signal {}, shutting down", signal);
      return true;
    }
    if (timeout) return false;  // timed out (EAGAIN) or interrupted
  }
}

// The server's TLS, reloaded from its files on SIGHUP: a reload that fails keeps the certificate
// in use (and says why), so a half-copied renewal never takes the API down.
class TlsReloader {
 public:
  TlsReloader(const net::TlsFiles& files, asio::io_context& io, HttpServer& http)
      : files_(files), io_(io), http_(http) {}
  // Loads the files for the first connection (before the io thread runs).
  Status load() {
    GPURENT_TRY(context, net::TlsContext::load(files_));
    spdlog::info("tls certificate=\"{}\"{}", context->description(),
                 context->asks_client_certificates() ? " client_certificates=asked" : "");
    http_.set_tls(std::move(context));
    return {};
  }
  void reload() {
    if (files_.cert_file.empty()) {
      spdlog::info("SIGHUP: nothing to reload (no [tls])");
      return;
    }
    auto context = net::TlsContext::load(files_);
    if (!context) {
      spdlog::error("tls_reload_failed error=\"{}\"; the certificate in use stays",
                    context.error().message);
      return;
    }
    spdlog::info("tls_reloaded certificate=\"{}\"", (*context)->description());
    asio::post(io_, [&http = http_, context = std::move(*context)] { http.set_tls(context); });
  }

 private:
  net::TlsFiles files_;
  asio::io_context& io_;
  HttpServer& http_;
};

// The io thread that serves HTTP, from the moment the server listens: a standby serves (forwards)
// before it leads. stop() closes the listener and joins the thread.
class ServingThread {
 public:
  ServingThread(asio::io_context& io, HttpServer& http) : io_(io), http_(http) {
    thread_ = std::thread([&io] {
      name_this_thread("api");
      io.run();
    });
  }
  ~ServingThread() { stop(); }
  ServingThread(const ServingThread&) = delete;
  ServingThread& operator=(const ServingThread&) = delete;
  void stop() {
    if (!thread_.joinable()) return;
    asio::post(io_, [this] { http_.close(); });
    io_.stop();
    thread_.join();
  }

 private:
  asio::io_context& io_;
  HttpServer& http_;
  std::thread thread_;
};

// A database URL as logged: without its password.
std::string redacted(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t at = url.find('@');
  if (scheme == std::string::npos || at == std::string::npos || at < scheme) return url;
  const size_t colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon) + ":***" + url.substr(at);
}

// Renews the lease every third of its ttl while the server leads. A server that is deposed, or
// that could not renew for a whole ttl (a standby may have taken over by now), ends its process
// at once: every commit it could still make would be refused (fenced), and what it holds in memory
// is no longer the state. Its agents and clients go on with the new leader.
class LeaseKeeper {
 public:
  LeaseKeeper(store::LeaderLease& lease, int64_t epoch, std::chrono::milliseconds ttl)
      : lease_(lease), epoch_(epoch), ttl_(ttl), thread_([this] { run(); }) {}
  ~LeaseKeeper() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

 private:
  void run() {
    name_this_thread("lease");
    auto renewed_at = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, ttl_ / 3, [this] { return stopping_; })) {
      const auto renewed = lease_.renew(epoch_);
      if (renewed && *renewed) {
        renewed_at = std::chrono::steady_clock::now();
      } else if (renewed) {
        spdlog::critical("deposed: a later leader took over from epoch {}; exiting", epoch_);
        std::_Exit(3);
      } else {
        spdlog::warn("lease_not_renewed epoch={} error=\"{}\"", epoch_, renewed.error().message);
      }
      if (std::chrono::steady_clock::now() - renewed_at > ttl_) {
        spdlog::critical("the lease of epoch {} could not be renewed for {} ms; exiting", epoch_,
                         ttl_.count());
        std::_Exit(3);
      }
    }
  }

  store::LeaderLease& lease_;
  const int64_t epoch_;
  const std::chrono::milliseconds ttl_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

// The services proxy's and the console's signing key, sealed under the secrets key file. Servers
// sharing a store share it through the database, so a console session or a Jupyter ticket
// outlives a failover; a lone server keeps it in its data directory. A key stored before keys
// were sealed is sealed now.
Result<SessionSigner> session_signer(const std::string& shared_store, const std::string& data_dir,
                                     const SecretBox& box) {
  if (shared_store.empty()) return SessionSigner::load_or_create(data_dir + "/session.key", box);
  GPURENT_TRY(stored, store::postgres_shared_secret(shared_store, "session_key",
                                                    SessionSigner::random().sealed_key(box)));
  auto signer = SessionSigner::from_stored(stored, box);
  if (!signer && signer.error().code == "secret_unsealable") {
    return fail(Error{signer.error().kind, signer.error().code,
                      signer.error().message +
                          " (or delete the row 'session_key' of the table server_secrets for a "
                          "new session key, which signs every browser out)"});
  }
  if (signer && !is_sealed(stored)) {
    GPURENT_CHECK(store::postgres_replace_shared_secret(shared_store, "session_key", stored,
                                                        signer->sealed_key(box)));
  }
  return signer;
}

// Stands by until this server holds the lease: the epoch it leads with, or nullopt when a stop
// signal came first. Meanwhile the router forwards to whoever leads.
std::optional<int64_t> stand_by(store::LeaderLease& lease, asio::io_context& io,
                                LeaderRouter& router, const sigset_t& signals,
                                const std::function<void()>& on_hangup) {
  constexpr timespec kPoll{.tv_sec = 0, .tv_nsec = 200'000'000};
  std::string known_leader = "-";
  for (;;) {
    if (auto taken = lease.try_acquire(); taken && *taken) {
      return *taken;
    } else if (!taken) {
      spdlog::warn("lease_not_taken error=\"{}\"", taken.error().message);
    }
    auto leader = lease.leader();
    const std::string url = leader && *leader ? (*leader)->url : "";
    if (url != known_leader) {
      spdlog::info("standing by: the leader is {}", url.empty() ? "(none)" : url);
      known_leader = url;
      asio::post(io, [&router, url] { router.set_leader_url(url); });
    }
    if (wait_for_stop(signals, on_hangup, &kPoll)) return std::nullopt;
  }
}

}  // namespace

int run_server(const ServerOptions& options, const std::function<void(const ReadyInfo&)>& on_ready,
               const LocalNode* local_node) {
  const sigset_t signals = block_server_signals();
  const HeapHeadroom headroom(kHeapHeadroomBytes);
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  // The database, the session key and (with a local node) the agent's files: the server's alone.
  if (!ec) std::filesystem::permissions(options.data_dir, std::filesystem::perms::owner_all, ec);
  if (ec) {
    spdlog::error("cannot create data directory {}: {}", options.data_dir, ec.message());
    return 1;
  }
  auto listen = parse_listen(options.listen);
  if (!listen) {
    spdlog::error("{}", listen.error().message);
    return 2;
  }
  ServerConfig config;
  if (!options.config_path.empty()) {
    auto read = read_server_config(options.config_path);
    if (!read) {
      spdlog::error("{}", read.error().message);
      return 2;
    }
    config = std::move(*read);
  }
  if (local_node && !config.tls.cert_file.empty()) {
    spdlog::error("gpurent dev serves plain HTTP on loopback: [tls] is for gpurent server");
    return 2;
  }
  const std::string store_url = !options.store.empty() ? options.store : config.store_url;
  const bool shared = store::is_postgres_url(store_url);
  if (!store_url.empty() && !shared) {
    spdlog::error("--store must be a postgres:// URL (without it: the SQLite file in {})",
                  options.data_dir);
    return 2;
  }
  if (shared && local_node) {
    spdlog::error("gpurent dev keeps its state in its own SQLite file: --store is for servers");
    return 2;
  }
  // Before this server listens or leads: a key file that cannot open what was sealed stops it
  // here, with the reason, rather than a new key silently signing every browser out.
  auto secrets = SecretBox::load_or_create(!config.secrets_key_file.empty()
                                               ? config.secrets_key_file
                                               : options.data_dir + "/secrets.key");
  if (!secrets) {
    spdlog::error("{}", secrets.error().message);
    return 1;
  }
  auto sessions = session_signer(shared ? store_url : "", options.data_dir, *secrets);
  if (!sessions) {
    spdlog::error("{}", sessions.error().message);
    return 1;
  }

  asio::io_context io(1);
  LeaderRouter router;
  HttpServer http(io, router.handler(), {}, router.forwarder());
  TlsReloader tls(config.tls, io, http);
  if (!config.tls.cert_file.empty()) {
    if (auto loaded = tls.load(); !loaded) {
      spdlog::error("{}", loaded.error().message);
      return 2;
    }
  }
  const auto reload = [&tls] { tls.reload(); };
  auto port = http.listen(listen->host, listen->port);
  if (!port) {
    spdlog::error("{}", port.error().message);
    return 1;
  }
  ServingThread serving(io, http);
  const std::string url_host = listen->host == "0.0.0.0" ? "127.0.0.1"
                               : listen->host.find(':') != std::string::npos
                                   ? "[" + listen->host + "]"
                                   : listen->host;
  const std::string url =
      fmt::format("{}://{}:{}", config.tls.cert_file.empty() ? "http" : "https", url_host, *port);

  // A shared store: stand by until this server leads.
  std::optional<store::LeaderLease> lease;
  std::optional<int64_t> epoch;
  if (shared) {
    const std::string advertise = !options.advertise_url.empty()  ? options.advertise_url
                                  : !config.advertise_url.empty() ? config.advertise_url
                                                                  : url;
    auto opened = store::LeaderLease::open(
        store_url, fmt::format("{} pid {} {}", advertise, ::getpid(), new_secret("")), advertise,
        options.lease_ttl);
    if (!opened) {
      spdlog::error("{}", opened.error().message);
      return 1;
    }
    lease.emplace(std::move(*opened));
    spdlog::info("gpurent server on {} stands by (store {})", url, redacted(store_url));
    epoch = stand_by(*lease, io, router, signals, reload);
    if (!epoch) return 0;
    spdlog::info("leading the control plane with epoch {}", *epoch);
  }
  auto store = shared ? store::open_postgres_store(store_url, epoch)
                      : store::open_sqlite_store(options.data_dir + "/gpurent.db");
  if (!store) {
    spdlog::error("{}", store.error().message);
    return 1;
  }
  auto snapshot = (*store)->load();
  if (!snapshot) {
    spdlog::error("cannot load the state: {}", snapshot.error().message);
    return 1;
  }
  SystemClock clock;
  controller::Controller controller(
      clock,
      {.currency = options.currency,
       .heartbeat_timeout = std::chrono::duration_cast<Millis>(options.node_heartbeat_timeout),
       .billing_interval = Millis(60'000),
       .seed = os_random_seed(),
       .clock_skew_limit = config.clock_skew_limit,
       .series_fed_by_host = true,
       .benchmarks = config.benchmarks});
  if (auto restored = controller.restore(std::move(*snapshot)); !restored) {
    spdlog::error("cannot restore the state: {}", restored.error().message);
    return 1;
  }
  if (auto rules = controller.fleet().monitor().set_config_rules(config.alert_rules); !rules) {
    spdlog::error("{}: {}", options.config_path, rules.error().message);
    return 2;
  }

  std::optional<std::string> shown_key;
  if (options.admin_key || !controller.accounts().credentials().has_admin_key()) {
    const std::string key = options.admin_key.value_or(new_secret("gpr_"));
    auto admin = controller.accounts().bootstrap_admin(hash_secret(key), key.substr(0, 12),
                                                       options.bootstrap_credit_micros);
    if (!admin) {
      spdlog::error("cannot create the admin key: {}", admin.error().message);
      return 1;
    }
    shown_key = key;
  }
  // The sample package product (ServerOptions::sample_package).
  if (options.sample_package && controller.accounts().packages().products().empty()) {
    const model::PackageProduct sample{.name = "h100-100h",
                                       .gpu_type = "h100-80g",
                                       .gpu_hours = 100,
                                       .price = 1500 * kMicrosPerUnit,
                                       .validity_days = 90};
    if (auto defined =
            controller.accounts().packages().set_product(model::platform_principal(), sample);
        !defined) {
      spdlog::warn("dev_sample_package_not_defined error=\"{}\"", defined.error().message);
    }
  }
  std::string local_join_token;
  if (local_node) {
    local_join_token = new_secret("gjt_");
    if (auto token = controller.accounts().credentials().create_join_token(
            model::platform_principal(), "local node", std::chrono::minutes(10),
            hash_secret(local_join_token));
        !token) {
      spdlog::error("cannot create the local node's join token: {}", token.error().message);
      return 1;
    }
  }

  // Before the host, so that it outlives the host's committer thread, which feeds it.
  WebhookNotifier webhooks(config.webhooks, config.outbound);
  ControllerHost host(io, controller, **store);
  host.set_after_commit([&webhooks](const controller::ChangeSet& changes) {
    webhooks.enqueue(changes.monitoring_changes.alert_history);
    webhooks.enqueue(changes.events);
  });
  if (auto committed = host.commit_now(); !committed) {
    spdlog::error("cannot write the bootstrap state: {}", committed.error().message);
    return 1;
  }
  auto rollup_writer = shared ? store::open_postgres_rollup_writer(store_url)
                              : store::open_sqlite_rollup_writer(options.data_dir + "/gpurent.db");
  if (!rollup_writer) {
    spdlog::error("{}", rollup_writer.error().message);
    return 1;
  }
  RollupPersister rollups(controller.fleet().monitor().series(), std::move(*rollup_writer));
  LogStore logs(options.data_dir + "/logs");
  auto uploads = UploadStore::open(options.data_dir + "/uploads", clock);
  if (!uploads) {
    spdlog::error("{}", uploads.error().message);
    return 1;
  }
  Api api(host, logs, std::move(*sessions));
  api.set_uploads(uploads->get());
  api.set_metrics_token(config.metrics_token);
  api.set_outbound(config.outbound);
  api.set_bind_node_credentials(config.bind_node_credentials);
  api.set_agents_need_certificates(!config.tls.client_ca_file.empty());
  api.set_rate_limits(config.rate_limits);
  host.start(options.tick_interval);
  asio::post(io, [&router, &api] { router.lead(api); });
  std::optional<LeaseKeeper> keeper;
  if (lease) keeper.emplace(*lease, *epoch, options.lease_ttl);
  spdlog::info("gpurent server listening on {} (data in {})", url, options.data_dir);

  std::function<void()> stop_local_node;
  int exit_code = 0;
  if (local_node) {
    if (auto started = local_node->start(url, local_join_token); started) {
      stop_local_node = std::move(*started);
    } else {
      spdlog::error("the local node did not start: {}", started.error().message);
      exit_code = 1;
    }
  }
  if (exit_code == 0) {
    on_ready(ReadyInfo{url, shown_key, options.data_dir});
    wait_for_stop(signals, reload);
  }
  if (stop_local_node) stop_local_node();
  serving.stop();
  host.stop();
  // Everything acknowledged is written: a standby may take over at once.
  keeper.reset();
  if (lease) {
    if (auto resigned = lease->resign(*epoch); !resigned) {
      spdlog::warn("lease_not_given_up error=\"{}\"", resigned.error().message);
    }
  }
  return exit_code;
}

}  // namespace gpurent::server
