// Rate limits: token buckets per API key and per source address, so one tenant's script (or an
// attacker's) cannot take the API from everyone else, and keys cannot be guessed at speed.
//
// Buckets (each a rate and a burst; a rate of 0 is no limit):
//   - per key, every request;                        default 200/s, burst 400
//   - per key, requests that create something;       default 20/s, burst 200
//     (a POST to a collection: instances, jobs, volumes, keys, uploads...)
//   - per source address, every request but agents'; default 500/s, burst 1,000
//   - per source address, failed authentications;    default 1/s, burst 20
//     (a 401 takes a token; with none left, the address is refused before its key is looked at)
// IPv6 addresses are limited by their /64, which one host can fill with addresses. Loopback
// addresses are not limited by address unless the operator asks (`limit_loopback`): `gpurent
// dev`, the tests and a proxy on the same machine would otherwise share one address's budget.
// Agents authenticate with node credentials and are not limited by address: a whole cluster
// behind one NAT address reports through it.
//
// A refused request is answered 429 with Retry-After (whole seconds) and the IETF draft's
// RateLimit-Policy and RateLimit headers (draft-ietf-httpapi-ratelimit-headers): the policy as
// `"<name>";q=<burst>;w=<seconds to refill it>` and the state as `"<name>";r=<tokens
// left>;t=<seconds until full>`. Answers to keyed requests carry both headers too, so a client
// can pace itself before it is refused.
//
// Memory is bounded: each family keeps at most kMaxBuckets; past that, full buckets (which
// carry no state) are dropped, and failing that the family starts afresh.
//
// Time comes from the Clock given; millisecond resolution. Not thread-safe: the API's I/O thread
// owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/result.h"

namespace gpurent::server {

struct RateLimit {
  double per_second = 0;  // 0: no limit
  int64_t burst = 0;
  bool limited() const { return per_second > 0; }
};

struct RateLimitConfig {
  RateLimit per_key{200, 400};
  RateLimit creations_per_key{20, 200};
  RateLimit per_address{500, 1'000};
  RateLimit auth_failures_per_address{1, 20};
  bool limit_loopback = false;
  // Every limit off (benchmarks that measure the API itself).
  static RateLimitConfig unlimited() { return {{}, {}, {}, {}, false}; }
};

// What a bucket says about a request.
struct RateDecision {
  bool allowed = true;
  std::string_view policy;    // the bucket's name, as the headers give it
  int64_t quota = 0;          // its burst
  int64_t window_s = 0;       // seconds to refill it from empty
  int64_t remaining = 0;      // whole tokens left
  int64_t reset_s = 0;        // seconds until it is full
  int64_t retry_after_s = 0;  // when refused: seconds until a token is back
  // The RateLimit-Policy and RateLimit headers (and Retry-After when refused).
  std::vector<std::pair<std::string, std::string>> headers() const;
  // The 429 problem for a refused request.
  Error error() const;
};

// Buckets of one limit, by who is limited.
class TokenBuckets {
 public:
  static constexpr size_t kMaxBuckets = 100'000;
  TokenBuckets(std::string_view name, RateLimit limit);

  // Takes one token from `who`'s bucket if it has one.
  RateDecision take(const std::string& who, Timestamp now);
  // Whether `who` has a token, taking none.
  RateDecision peek(const std::string& who, Timestamp now);
  size_t size() const { return buckets_.size(); }

 private:
  struct Bucket {
    int64_t micro_tokens = 0;  // millionths of a token
    Timestamp updated{};
  };
  Bucket& refilled(const std::string& who, Timestamp now);
  RateDecision decision(const Bucket& bucket, bool allowed) const;
  void make_room(Timestamp now);

  std::string_view name_;
  RateLimit limit_;
  int64_t capacity_ = 0;       // micro-tokens
  int64_t refill_per_ms_ = 0;  // micro-tokens
  std::unordered_map<std::string, Bucket> buckets_;
};

class RateLimiter {
 public:
  RateLimiter(RateLimitConfig config, const Clock& clock);

  // Whether `address` is limited at all (not loopback, unless configured).
  bool limits_address(std::string_view address) const;
  // Before a request from `address` is routed (agents' requests are not asked about): refused
  // when the address is out of requests or of failed authentications.
  RateDecision admit_address(std::string_view address);
  // Once the request's answer is known: a 401 takes one of the address's failure tokens.
  void answered(std::string_view address, int status);
  // A keyed request, once its key is known: its key's bucket, and for a creation its key's
  // creations bucket too. The decision to report: a refusal, or the emptier bucket.
  RateDecision admit_key(const std::string& key_id, bool creates);

  // The address's bucket name: the address, or for IPv6 its /64.
  static std::string address_bucket(std::string_view address);

 private:
  RateLimitConfig config_;
  const Clock* clock_;
  TokenBuckets per_key_;
  TokenBuckets creations_;
  TokenBuckets per_address_;
  TokenBuckets auth_failures_;
};

}  // namespace gpurent::server
