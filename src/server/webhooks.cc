#include "server/webhooks.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

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
  const std::string origin = webhook.url.substr(0, path);
  GPURENT_TRY(client, client::HttpClient::create(origin, {.ca_file = webhook.ca_file}));
  GPURENT_TRY(parts, client::parse_base_url(origin));  // as the client read it, so it parses
  uint16_t port = 0;
  std::from_chars(parts.port.data(), parts.port.data() + parts.port.size(), port);
  return WebhookEndpoint{std::move(client), std::move(parts), port,
                         path == std::string::npos ? "/" : webhook.url.substr(path)};
}

WebhookNotifier::WebhookNotifier(std::vector<Webhook> webhooks, OutboundPolicy outbound)
    : webhooks_(std::move(webhooks)), outbound_(std::move(outbound)) {
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

WebhookNotifier::Outcome WebhookNotifier::deliver(const Delivery& delivery) {
  const Webhook& webhook = webhooks_[delivery.webhook];
  auto& endpoint = endpoints_[delivery.webhook];
  if (!endpoint) return Outcome::kGiveUp;  // logged at start
  auto addresses = outbound_.resolve(endpoint->origin.host, endpoint->port);
  if (!addresses) {
    spdlog::warn("webhook {}: {}", webhook.url, addresses.error().message);
    return addresses.error().code == "outbound_refused" ? Outcome::kGiveUp : Outcome::kRetry;
  }
  client::HttpRequest request{.method = "POST", .target = endpoint->path, .body = delivery.body};
  Result<client::HttpResponse> response = fail(Error::internal("no address"));
  // To the addresses just checked, in turn as a client of the name would try them, and never to
  // the name resolved again (the URL still names the server: Host, TLS server name, certificate).
  for (const auto& checked : *addresses) {
    if (auto pinned = endpoint->client.connect_to(checked.address().to_string()); !pinned) {
      response = fail(std::move(pinned).error());
      break;
    }
    response = endpoint->client.send(request, kTimeout);
    if (response || response.error().code != "connection_failed") break;
  }
  if (!response) {
    spdlog::warn("webhook {}: {}", webhook.url, response.error().message);
    return Outcome::kRetry;
  }
  if (response->status / 100 != 2) {
    spdlog::warn("webhook {}: answered {}", webhook.url, response->status);
    return Outcome::kRetry;
  }
  return Outcome::kDelivered;
}

void WebhookNotifier::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const Delivery delivery = std::move(queue_.front());
    queue_.pop_front();
    auto backoff = kFirstBackoff;
    Outcome outcome = Outcome::kRetry;
    int attempt = 1;
    for (;; ++attempt) {
      lock.unlock();
      outcome = deliver(delivery);
      lock.lock();
      if (outcome != Outcome::kRetry || attempt == kMaxAttempts) break;
      if (cv_.wait_for(lock, backoff, [this] { return stopping_; })) return;
      backoff *= 2;
    }
    if (outcome == Outcome::kDelivered) {
      ++stats_.sent;
    } else {
      ++stats_.failed;
      spdlog::warn("webhook {}: not delivered after {} attempt(s)", webhooks_[delivery.webhook].url,
                   attempt);
    }
  }
}

}  // namespace gpurent::server
