// Alert notifications by webhook: each alert transition (controller::AlertRecord, as GET
// /v1/alerts shows it in "history") is POSTed as JSON to every configured URL.
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
#include <string>
#include <thread>
#include <vector>

#include "controller/monitoring.h"

namespace gpurent::server {

class WebhookNotifier {
 public:
  static constexpr size_t kMaxQueued = 1'000;
  static constexpr int kMaxAttempts = 6;

  // URLs are "http://host:port/path".
  explicit WebhookNotifier(std::vector<std::string> urls);
  ~WebhookNotifier();
  WebhookNotifier(const WebhookNotifier&) = delete;
  WebhookNotifier& operator=(const WebhookNotifier&) = delete;

  void enqueue(const std::vector<controller::AlertRecord>& records);

  struct Stats {
    uint64_t sent = 0;
    uint64_t failed = 0;   // gave up after kMaxAttempts
    uint64_t dropped = 0;  // the queue was full
  };
  Stats stats() const;

 private:
  struct Delivery {
    size_t url = 0;  // index into urls_
    std::string body;
  };
  void run();
  bool deliver(const Delivery& delivery);

  std::vector<std::string> urls_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Delivery> queue_;
  bool stopping_ = false;
  Stats stats_;
  std::thread thread_;
};

}  // namespace gpurent::server
