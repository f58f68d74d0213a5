#include "server/webhooks.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "client/http_client.h"
#include "common/threads.h"
#include "server/monitoring_api.h"
#include "server/views.h"

namespace gpurent::server {

namespace {

constexpr std::chrono::milliseconds kFirstBackoff{500};
constexpr std::chrono::seconds kTimeout{10};

}  // namespace

Result<WebhookEndpoint> webhook_client(const Webhook& webhook) {
  // "scheme://authority/path": the client takes the origin, the request the path.
  const size_t scheme_end = webhook.url.find("://");
  const size_t path = webhook.url.find(
      '/', scheme_end == std::string::npos ? 0 : scheme_end + std::string_view("://").size());
  GPURENT_TRY(client, client::HttpClient::create(webhook.url.substr(0, path),
                                                 {.ca_file = webhook.ca_file}));
  return WebhookEndpoint{std::move(client),
                         path == std::string::npos ? "/" : webhook.url.substr(path)};
}

WebhookNotifier::WebhookNotifier(std::vector<Webhook> webhooks) : webhooks_(std::move(webhooks)) {
  for (const auto& webhook : webhooks_) {
    auto endpoint = webhook_client(webhook);
    if (!endpoint) spdlog::error("webhook {}: {}", webhook.url, endpoint.error().message);
    endpoints_.push_back(endpoint ? std::optional(std::move(*endpoint)) : std::nullopt);
  }
  thread_ = std::thread([this] {
    name_this_thread("webhooks");
    run();
  });
}

WebhookNotifier::~WebhookNotifier() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void WebhookNotifier::push(size_t webhook, const std::string& body, std::string_view what) {
  if (queue_.size() >= kMaxQueued) {
    ++stats_.dropped;
    spdlog::warn("webhook queue full ({}): dropped {} for {}", kMaxQueued, what,
                 webhooks_[webhook].url);
    return;
  }
  queue_.push_back({webhook, body});
}

void WebhookNotifier::enqueue(const std::vector<controller::AlertRecord>& records) {
  if (webhooks_.empty() || records.empty()) return;
  std::lock_guard lock(mutex_);
  for (const auto& record : records) {
    Json view = alert_record_view(record);
    view["type"] = "alert";
    const std::string body = view.dump();
    for (size_t webhook = 0; webhook < webhooks_.size(); ++webhook) {
      push(webhook, body, fmt::format("alert transition {}", record.seq));
    }
  }
  cv_.notify_one();
}

void WebhookNotifier::enqueue(const std::vector<model::Event>& events) {
  if (webhooks_.empty() || events.empty()) return;
  std::lock_guard lock(mutex_);
  for (const auto& event : events) {
    std::string body;  // made for the first webhook that wants it
    for (size_t webhook = 0; webhook < webhooks_.size(); ++webhook) {
      if (std::ranges::find(webhooks_[webhook].events, event.kind) ==
          webhooks_[webhook].events.end()) {
        continue;
      }
      if (body.empty()) {
        Json view = event_view(event);
        view["type"] = "event";
        body = view.dump();
      }
      push(webhook, body, fmt::format("event {}", event.seq));
    }
  }
  cv_.notify_one();
}

WebhookNotifier::Stats WebhookNotifier::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

bool WebhookNotifier::deliver(const Delivery& delivery) {
  const Webhook& webhook = webhooks_[delivery.webhook];
  auto& endpoint = endpoints_[delivery.webhook];
  if (!endpoint) return false;  // logged at start
  auto response = endpoint->client.send(
      {.method = "POST", .target = endpoint->path, .body = delivery.body}, kTimeout);
  if (!response) {
    spdlog::warn("webhook {}: {}", webhook.url, response.error().message);
    return false;
  }
  if (response->status / 100 != 2) {
    spdlog::warn("webhook {}: answered {}", webhook.url, response->status);
    return false;
  }
  return true;
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
      spdlog::warn("webhook {}: not delivered after {} attempts", webhooks_[delivery.webhook].url,
                   kMaxAttempts);
    }
  }
}

}  // namespace gpurent::server
