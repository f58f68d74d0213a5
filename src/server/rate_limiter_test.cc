// Rate limits (server/rate_limiter.h): the buckets, their refill, the headers, and which
// addresses are limited.
#include "server/rate_limiter.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gpurent::server {
namespace {

std::string header(const RateDecision& decision, std::string_view name) {
  const auto headers = decision.headers();
  const auto it = std::ranges::find_if(headers, [&](const auto& h) { return h.first == name; });
  return it == headers.end() ? "" : it->second;
}

TEST(RateLimiterTest, ABucketAllowsItsBurstThenRefillsAtItsRate) {
  ManualClock clock(from_unix_ms(1'000'000));
  RateLimitConfig config = RateLimitConfig::unlimited();
  config.per_key = {10, 5};
  RateLimiter limiter(config, clock);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(limiter.admit_key("k-1", false).allowed) << i;
  const RateDecision refused = limiter.admit_key("k-1", false);
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.error().kind, ErrorKind::kTooManyRequests);
  EXPECT_EQ(http_status(refused.error().kind), 429);
  EXPECT_EQ(header(refused, "Retry-After"), "1");
  EXPECT_EQ(header(refused, "RateLimit-Policy"), "\"key\";q=5;w=1");
  EXPECT_EQ(header(refused, "RateLimit"), "\"key\";r=0;t=1");
  // Another key has its own bucket.
  EXPECT_TRUE(limiter.admit_key("k-2", false).allowed);
  // 10 per second: one token back every 100 ms, never more than the burst.
  clock.advance(Millis(99));
  EXPECT_FALSE(limiter.admit_key("k-1", false).allowed);
  clock.advance(Millis(1));
  EXPECT_TRUE(limiter.admit_key("k-1", false).allowed);
  clock.advance(std::chrono::hours(24));
  const RateDecision full = limiter.admit_key("k-1", false);
  EXPECT_TRUE(full.allowed);
  EXPECT_EQ(full.remaining, 4);
  EXPECT_EQ(header(full, "Retry-After"), "");
}

TEST(RateLimiterTest, CreationsHaveTheirOwnStricterBucket) {
  ManualClock clock(from_unix_ms(0));
  RateLimitConfig config = RateLimitConfig::unlimited();
  config.per_key = {100, 100};
  config.creations_per_key = {1, 2};
  RateLimiter limiter(config, clock);
  EXPECT_TRUE(limiter.admit_key("k", true).allowed);
  const RateDecision second = limiter.admit_key("k", true);
  EXPECT_TRUE(second.allowed);
  EXPECT_EQ(second.policy, "key-creations");  // the emptier bucket is the one reported
  const RateDecision third = limiter.admit_key("k", true);
  EXPECT_FALSE(third.allowed);
  EXPECT_EQ(third.policy, "key-creations");
  EXPECT_TRUE(limiter.admit_key("k", false).allowed);  // reads go on
}

TEST(RateLimiterTest, FailedAuthenticationsBlockTheAddressUntilTheyRefill) {
  ManualClock clock(from_unix_ms(0));
  RateLimitConfig config = RateLimitConfig::unlimited();
  config.auth_failures_per_address = {1, 3};
  RateLimiter limiter(config, clock);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(limiter.admit_address("203.0.113.7").allowed);
    limiter.answered("203.0.113.7", 401);
  }
  limiter.answered("203.0.113.7", 200);  // a success takes nothing
  EXPECT_FALSE(limiter.admit_address("203.0.113.7").allowed);
  EXPECT_TRUE(limiter.admit_address("203.0.113.8").allowed);
  clock.advance(std::chrono::seconds(1));
  EXPECT_TRUE(limiter.admit_address("203.0.113.7").allowed);
}

TEST(RateLimiterTest, LoopbackIsNotLimitedByAddressUnlessAsked) {
  ManualClock clock(from_unix_ms(0));
  RateLimitConfig config = RateLimitConfig::unlimited();
  config.per_address = {1, 1};
  RateLimiter open(config, clock);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(open.admit_address("127.0.0.1").allowed);
  EXPECT_TRUE(open.admit_address("::1").allowed);
  EXPECT_TRUE(open.admit_address("::1").allowed);
  config.limit_loopback = true;
  RateLimiter strict(config, clock);
  EXPECT_TRUE(strict.admit_address("127.0.0.1").allowed);
  EXPECT_FALSE(strict.admit_address("127.0.0.1").allowed);
}

TEST(RateLimiterTest, AnIPv6HostIsLimitedByIts64AndAMappedIPv4ByItsAddress) {
  EXPECT_EQ(RateLimiter::address_bucket("2001:db8:1:2:aaaa::1"),
            RateLimiter::address_bucket("2001:db8:1:2:ffff::9"));
  EXPECT_NE(RateLimiter::address_bucket("2001:db8:1:2::1"),
            RateLimiter::address_bucket("2001:db8:1:3::1"));
  EXPECT_EQ(RateLimiter::address_bucket("::ffff:198.51.100.4"), "198.51.100.4");
  EXPECT_EQ(RateLimiter::address_bucket("198.51.100.4"), "198.51.100.4");
  EXPECT_EQ(RateLimiter::address_bucket("not an address"), "not an address");
}

TEST(RateLimiterTest, MemoryIsBoundedAndFullBucketsGoFirst) {
  ManualClock clock(from_unix_ms(0));
  TokenBuckets buckets("address", {1000, 1});
  for (size_t i = 0; i < TokenBuckets::kMaxBuckets; ++i)
    buckets.take(std::to_string(i), clock.now());
  EXPECT_EQ(buckets.size(), TokenBuckets::kMaxBuckets);
  clock.advance(Millis(2));  // every bucket full again: nothing worth keeping
  buckets.take("newcomer", clock.now());
  EXPECT_EQ(buckets.size(), 1u);
}

}  // namespace
}  // namespace gpurent::server
