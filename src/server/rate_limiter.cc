#include "server/rate_limiter.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace gpurent::server {

namespace {

constexpr int64_t kMicro = 1'000'000;

int64_t ceil_div(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

}  // namespace

std::vector<std::pair<std::string, std::string>> RateDecision::headers() const {
  std::vector<std::pair<std::string, std::string>> out;
  if (policy.empty()) return out;
  out.emplace_back("RateLimit-Policy", fmt::format("\"{}\";q={};w={}", policy, quota, window_s));
  out.emplace_back("RateLimit", fmt::format("\"{}\";r={};t={}", policy, remaining, reset_s));
  if (!allowed) out.emplace_back("Retry-After", std::to_string(retry_after_s));
  return out;
}

Error RateDecision::error() const {
  return {ErrorKind::kTooManyRequests, "rate_limited",
          fmt::format("too many requests ({} limit: {} at once, refilled in {} s); retry after "
                      "{} s",
                      policy, quota, window_s, retry_after_s)};
}

TokenBuckets::TokenBuckets(std::string_view name, RateLimit limit)
    : name_(name),
      limit_(limit),
      capacity_(limit.burst * kMicro),
      refill_per_ms_(std::max<int64_t>(1, std::llround(limit.per_second * 1000.0))) {}

TokenBuckets::Bucket& TokenBuckets::refilled(const std::string& who, Timestamp now) {
  auto it = buckets_.find(who);
  if (it == buckets_.end()) {
    if (buckets_.size() >= kMaxBuckets) make_room(now);
    it = buckets_.emplace(who, Bucket{capacity_, now}).first;
  }
  Bucket& bucket = it->second;
  const int64_t elapsed = std::max<int64_t>(0, (now - bucket.updated).count());
  // Bounded before multiplying: a bucket untouched for a long time is simply full.
  const int64_t room = capacity_ - bucket.micro_tokens;
  bucket.micro_tokens +=
      std::min(room, elapsed >= ceil_div(room, refill_per_ms_) ? room : elapsed * refill_per_ms_);
  bucket.updated = now;
  return bucket;
}

void TokenBuckets::make_room(Timestamp now) {
  std::erase_if(buckets_, [&](const auto& entry) {
    const Bucket& bucket = entry.second;
    const int64_t elapsed = std::max<int64_t>(0, (now - bucket.updated).count());
    return elapsed >= ceil_div(capacity_ - bucket.micro_tokens, refill_per_ms_);
  });
  // Every bucket in use: a flood of distinct callers. Starting afresh forgets their debts, which
  // a flood that large gains little from; keeping them would grow memory without bound.
  if (buckets_.size() >= kMaxBuckets) buckets_.clear();
}

RateDecision TokenBuckets::decision(const Bucket& bucket, bool allowed) const {
  RateDecision d;
  d.allowed = allowed;
  d.policy = name_;
  d.quota = limit_.burst;
  d.window_s = ceil_div(capacity_, refill_per_ms_ * 1000);
  d.remaining = bucket.micro_tokens / kMicro;
  d.reset_s = ceil_div(capacity_ - bucket.micro_tokens, refill_per_ms_ * 1000);
  if (!allowed) {
    d.retry_after_s =
        std::max<int64_t>(1, ceil_div(kMicro - bucket.micro_tokens, refill_per_ms_ * 1000));
  }
  return d;
}

RateDecision TokenBuckets::take(const std::string& who, Timestamp now) {
  if (!limit_.limited()) return {};
  Bucket& bucket = refilled(who, now);
  const bool allowed = bucket.micro_tokens >= kMicro;
  if (allowed) bucket.micro_tokens -= kMicro;
  return decision(bucket, allowed);
}

RateDecision TokenBuckets::peek(const std::string& who, Timestamp now) {
  if (!limit_.limited()) return {};
  const Bucket& bucket = refilled(who, now);
  return decision(bucket, bucket.micro_tokens >= kMicro);
}

RateLimiter::RateLimiter(RateLimitConfig config, const Clock& clock)
    : config_(config),
      clock_(&clock),
      per_key_("key", config.per_key),
      creations_("key-creations", config.creations_per_key),
      per_address_("address", config.per_address),
      auth_failures_("address-auth-failures", config.auth_failures_per_address) {}

bool RateLimiter::limits_address(std::string_view address) const {
  if (config_.limit_loopback) return true;
  return !(address.starts_with("127.") || address == "::1" || address.starts_with("::ffff:127."));
}

std::string RateLimiter::address_bucket(std::string_view address) {
  std::array<unsigned char, 16> bytes{};
  std::string text(address);
  if (address.find(':') == std::string_view::npos ||
      inet_pton(AF_INET6, text.c_str(), bytes.data()) != 1) {
    return text;
  }
  // An IPv4-mapped address is its IPv4 address; any other IPv6 address its /64.
  const bool mapped =
      std::all_of(bytes.begin(), bytes.begin() + 10, [](auto b) { return b == 0; }) &&
      bytes[10] == 0xff && bytes[11] == 0xff;
  if (mapped) return fmt::format("{}.{}.{}.{}", bytes[12], bytes[13], bytes[14], bytes[15]);
  return fmt::format("{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}::/64", bytes[0], bytes[1],
                     bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7]);
}

RateDecision RateLimiter::admit_address(std::string_view address) {
  if (!limits_address(address)) return {};
  const std::string who = address_bucket(address);
  const Timestamp now = clock_->now();
  RateDecision failures = auth_failures_.peek(who, now);
  if (!failures.allowed) return failures;
  return per_address_.take(who, now);
}

void RateLimiter::answered(std::string_view address, int status) {
  if (status != 401 || !limits_address(address)) return;
  auth_failures_.take(address_bucket(address), clock_->now());
}

RateDecision RateLimiter::admit_key(const std::string& key_id, bool creates) {
  const Timestamp now = clock_->now();
  RateDecision general = per_key_.take(key_id, now);
  if (!general.allowed || !creates) return general;
  RateDecision creation = creations_.take(key_id, now);
  if (!creation.allowed || general.policy.empty()) return creation;
  return creation.remaining < general.remaining ? creation : general;
}

}  // namespace gpurent::server
