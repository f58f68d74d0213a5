// Notifications by webhook: each alert transition (controller::AlertRecord, as GET /v1/alerts
// shows it in "history", with "type": "alert") is POSTed as JSON to every configured URL, and each
// event of a kind a webhook lists (Webhook::events; by default the balance guard's, as GET
// /v1/events shows it, with "type": "event") to that webhook. URLs are http:// or https:// (the
// receiver's certificate verified against the system's store or the webhook's ca_file).
//
// - Only where the operator lets the server connect (server/outbound.h): before each delivery the
//   host is resolved and every address checked. The delivery then goes to an address checked
//   (HttpClient::connect_to), never to the name resolved again (DNS rebinding), http:// and
//   https:// alike; the URL still names the server (Host, TLS server name, the certificate's
//   check). Redirects are not followed (a 3xx is a failed delivery). A refused address is given
//   up at once, without retries, and logged.
//
// - Durable first: the controller host hands over a ChangeSet's alert records only after the
//   store committed it (ControllerHost::set_after_commit), so a notification never announces
//   something a crash could undo.
// - Never blocks the controller: enqueue() takes a mutex and appends; the sending is done by the
//   notifier's own thread, one delivery at a time, in order.
// - Retries: a transport error or a non-2xx answer is retried after 0.5, 1, 2, 4 and 8 s (six
//   attempts in all), then counted as failed. Stopping abandons the waits.
// - Bounded: at most kMaxQueued deliveries wait; beyond that new ones are dropped and counted
//   (a receiver that is down for long must not grow the server's memory).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/http_client.h"
#include "client/http_wire.h"
#include "controller/monitoring.h"
#include "server/outbound.h"
#include "server/server_config.h"

namespace gpurent::server {

// A client for the webhook's origin (https with its CA file; for http, deliveries replace it with
// one for the address they checked), the origin taken apart, and the path to POST to ("/" when
// the URL has none). Errors: the URL or the CA file cannot be used (HttpClient::create's codes).
struct WebhookEndpoint {
  client::HttpClient client;
  client::BaseUrl origin;
  uint16_t port = 0;
  std::string path;
};
Result<WebhookEndpoint> webhook_client(const Webhook& webhook);

class WebhookNotifier {
 public:
  static constexpr size_t kMaxQueued = 1'000;
  static constexpr int kMaxAttempts = 6;

  WebhookNotifier(std::vector<Webhook> webhooks, OutboundPolicy outbound);
  ~WebhookNotifier();
  WebhookNotifier(const WebhookNotifier&) = delete;
  WebhookNotifier& operator=(const WebhookNotifier&) = delete;

  void enqueue(const std::vector<controller::AlertRecord>& records);
  void enqueue(const std::vector<model::Event>& events);

  struct Stats {
    uint64_t sent = 0;
    uint64_t failed = 0;   // gave up after kMaxAttempts, or at once where refused
    uint64_t dropped = 0;  // the queue was full
  };
  Stats stats() const;

 private:
  struct Delivery {
    size_t webhook = 0;  // index into webhooks_
    std::string body;
  };
  // Queues one delivery; the caller holds mutex_.
  void push(size_t webhook, const std::string& body, std::string_view what);
  enum class Outcome { kDelivered, kRetry, kGiveUp };
  void run();
  Outcome deliver(const Delivery& delivery);

  std::vector<Webhook> webhooks_;
  const OutboundPolicy outbound_;
  // One client per webhook, made once (an https client loads the trusted certificates, which
  // takes milliseconds) and used only by the notifier's thread, which keeps its connection alive
  // between deliveries; empty where the webhook cannot be used (the config check refuses those).
  std::vector<std::optional<WebhookEndpoint>> endpoints_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Delivery> queue_;
  bool stopping_ = false;
  Stats stats_;
  std::thread thread_;
};

}  // namespace gpurent::server
