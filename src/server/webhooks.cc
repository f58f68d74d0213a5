#include "server/webhooks.h"

#include <spdlog/spdlog.h>

#include "client/http_client.h"
#include "server/monitoring_api.h"

namespace gpurent::server {

namespace {

constexpr std::chrono::milliseconds kFirstBackoff{500};
constexpr std::chrono::seconds kTimeout{10};

}  // namespace

WebhookNotifier::WebhookNotifier(std::vector<std::string> urls) : urls_(std::move(urls)) {
  thread_ = std::thread([this] { run(); });
}

WebhookNotifier::~WebhookNotifier() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void WebhookNotifier::enqueue(const std::vector<controller::AlertRecord>& records) {
  if (urls_.empty() || records.empty()) return;
  std::lock_guard lock(mutex_);
  for (const auto& record : records) {
    const std::string body = alert_record_view(record).dump();
    for (size_t url = 0; url < urls_.size(); ++url) {
      if (queue_.size() >= kMaxQueued) {
        ++stats_.dropped;
        spdlog::warn("webhook queue full ({}): dropped alert transition {} for {}", kMaxQueued,
                     record.seq, urls_[url]);
        continue;
      }
      queue_.push_back({url, body});
    }
  }
  cv_.notify_one();
}

WebhookNotifier::Stats WebhookNotifier::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

bool WebhookNotifier::deliver(const Delivery& delivery) {
  const std::string& url = urls_[delivery.url];
  // "http://host:port/path": the client takes the origin, the request the path.
  const size_t path = url.find('/', std::string_view("http://").size());
  auto client = client::HttpClient::create(url.substr(0, path));
  if (!client) return false;
  auto response = client->send({.method = "POST",
                                .target = path == std::string::npos ? "/" : url.substr(path),
                                .body = delivery.body},
                               kTimeout);
  return response && response->status / 100 == 2;
}

void WebhookNotifier::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const Delivery delivery = std::move(queue_.front());
    queue_.pop_front();
    auto backoff = kFirstBackoff;
    bool delivered = false;
    for (int attempt = 1; attempt <= kMaxAttempts && !stopping_; ++attempt) {
      lock.unlock();
      delivered = deliver(delivery);
      lock.lock();
      if (delivered || attempt == kMaxAttempts) break;
      if (cv_.wait_for(lock, backoff, [this] { return stopping_; })) return;
      backoff *= 2;
    }
    if (delivered) {
      ++stats_.sent;
    } else {
      ++stats_.failed;
      spdlog::warn("webhook {}: not delivered after {} attempts", urls_[delivery.url],
                   kMaxAttempts);
    }
  }
}

}  // namespace gpurent::server
