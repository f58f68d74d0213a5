#include <gtest/gtest.h>

#include <set>

#include "common/assert.h"
#include "common/clock.h"
#include "common/indexed_map.h"
#include "common/json.h"
#include "common/money.h"
#include "common/random.h"
#include "common/result.h"
#include "common/suggest.h"

namespace gpurent {
namespace {

TEST(IndexedMap, FindsByKeyWalksInKeyOrderAndSurvivesCopiesAndMoves) {
  IndexedMap<int> map;
  for (const char* key : {"i-c", "i-a", "i-b"}) {
    EXPECT_TRUE(map.emplace(key, static_cast<int>(map.size())).second);
  }
  EXPECT_FALSE(map.emplace("i-a", 99).second);  // an existing key keeps its value
  EXPECT_EQ(map.at("i-a"), 1);
  EXPECT_EQ(map.size(), 3u);
  EXPECT_THROW(map.at("i-z"), std::out_of_range);
  EXPECT_EQ(map.find("i-z"), map.end());
  ASSERT_NE(map.find("i-b"), map.end());
  map.find("i-b")->second = 7;
  EXPECT_EQ(map.at("i-b"), 7);
  std::string walked;
  for (const auto& [key, value] : map) walked += key + "=" + std::to_string(value) + " ";
  EXPECT_EQ(walked, "i-a=1 i-b=7 i-c=0 ");
  EXPECT_EQ(map.upper_bound("i-a")->first, "i-b");

  // A copy has an index of its own: changing it leaves the original alone.
  IndexedMap<int> copy = map;
  copy.at("i-c") = 5;
  EXPECT_EQ(map.at("i-c"), 0);
  EXPECT_EQ(copy.at("i-c"), 5);
  copy = map;
  EXPECT_EQ(copy.at("i-c"), 0);
  const IndexedMap<int> moved = std::move(copy);
  EXPECT_EQ(moved.at("i-b"), 7);
  EXPECT_TRUE(moved.contains("i-c"));
  EXPECT_EQ(moved.find("i-c")->second, 0);
}

TEST(Money, ChargesAreExactAndRoundTowardZeroOnce) {
  EXPECT_EQ(charge_for_seconds(18'000'000, 1000, 1), 5'000);
  EXPECT_EQ(charge_for_seconds(18'000'000, 2000, 3600), 36'000'000);
  EXPECT_EQ(charge_for_seconds(1'000'000, 1000, 1), 277);            // 277.77... rounds down
  EXPECT_EQ(charge_for_seconds(18'000'000, 500, 7200), 18'000'000);  // half a GPU, two hours
  // No overflow for a year of 8 GPUs at an absurd price.
  EXPECT_EQ(charge_for_seconds(int64_t{1'000'000} * kMicrosPerUnit, 8000, 365LL * 24 * 3600),
            int64_t{1'000'000} * kMicrosPerUnit * 8 * 365 * 24);
}

TEST(Money, FormatsAndParsesDecimals) {
  EXPECT_EQ(format_micros(12'345'678), "12.345678");
  EXPECT_EQ(format_micros(-5), "-0.000005");
  EXPECT_EQ(format_money(18'004'999, "CNY"), "CNY 18.00");
  EXPECT_EQ(format_money(18'005'000, "CNY"), "CNY 18.01");
  EXPECT_EQ(format_money(-1'500'000, "CNY"), "-CNY 1.50");
  EXPECT_EQ(format_money(576'000'000, ""), "576.00");
  EXPECT_EQ(parse_decimal_micros("100"), 100 * kMicrosPerUnit);
  EXPECT_EQ(parse_decimal_micros("12.5"), 12'500'000);
  EXPECT_EQ(parse_decimal_micros("0.000001"), 1);
  EXPECT_EQ(parse_decimal_micros("-3.25"), -3'250'000);
  for (const char* bad : {"", "1.", ".", "1.0000001", "1e3", "12a", "--1", "9999999999999"}) {
    EXPECT_FALSE(parse_decimal_micros(bad)) << bad;
  }
}

TEST(Clock, Rfc3339RoundTripsWithMilliseconds) {
  const Timestamp t = from_unix_ms(1'796'052'373'123);
  const std::string text = format_rfc3339(t);
  EXPECT_EQ(text, "2026-11-30T15:26:13.123Z");
  EXPECT_EQ(parse_rfc3339(text), t);
  EXPECT_EQ(parse_rfc3339("2026-11-30T15:26:13Z"), from_unix_ms(1'796'052'373'000));
  EXPECT_FALSE(parse_rfc3339("2026-13-30T15:26:13Z"));
  EXPECT_FALSE(parse_rfc3339("yesterday"));
  ManualClock clock(t);
  clock.advance(Millis(1500));
  EXPECT_EQ(clock.now(), t + Millis(1500));
}

TEST(Random, SeededIdsAreDeterministicAndDistinct) {
  Rng a(42), b(42);
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const auto id = a.id("i-");
    EXPECT_EQ(id, b.id("i-"));
    EXPECT_EQ(id.size(), 18u);
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(a.uniform(7), 7u);
}

TEST(Random, SecretsAreLongRandomAndHashedStably) {
  const auto one = new_secret("gpr_"), two = new_secret("gpr_");
  EXPECT_NE(one, two);
  EXPECT_EQ(one.size(), 4u + 43u);
  EXPECT_EQ(hash_secret(one), hash_secret(one));
  EXPECT_NE(hash_secret(one), hash_secret(two));
  EXPECT_EQ(hash_secret(one).size(), 64u);
}

TEST(Json, ParsesObjectsAndRejectsEverythingElse) {
  EXPECT_TRUE(parse_json_object(R"({"a": 1})"));
  EXPECT_EQ(parse_json_object("[1]").error().code, "malformed_json");
  EXPECT_EQ(parse_json_object("{\"a\": ").error().code, "malformed_json");
  EXPECT_EQ(parse_json_object("").error().code, "malformed_json");
  EXPECT_EQ(parse_json_object(std::string(100, '[') + std::string(100, ']')).error().code,
            "malformed_json");
  std::string deep = "{\"a\":" + std::string(40, '[') + std::string(40, ']') + "}";
  EXPECT_EQ(parse_json_object(deep).error().kind, ErrorKind::kInvalidArgument);
}

TEST(Json, NestingIsCountedOutsideStringsOnly) {
  const auto nested = [](int levels, std::string_view inner) {
    return "{\"a\":" + std::string(levels - 1, '[') + std::string(inner) +
           std::string(levels - 1, ']') + "}";
  };
  EXPECT_TRUE(parse_json_object(nested(kMaxJsonDepth, "1")));
  EXPECT_EQ(parse_json_object(nested(kMaxJsonDepth + 1, "1")).error().code, "malformed_json");
  // Brackets and escaped quotes inside strings are text, not nesting.
  EXPECT_TRUE(parse_json_object(nested(kMaxJsonDepth, R"("[[{{\"[[")")));
  const auto text = parse_json_object(R"({"s": "\\", "t": "[[[["})");
  ASSERT_TRUE(text);
  EXPECT_EQ((*text)["t"], "[[[[");
}

TEST(Json, FieldReadersValidateTypesAndRanges) {
  const Json body = Json::parse(R"({"n": 5, "big": 18446744073709551615, "s": "x", "neg": -1,
                                    "env": {"A": "1"}, "list": ["a", 2], "flag": true})");
  EXPECT_EQ(*required_int(body, "n", 1, 8), 5);
  EXPECT_EQ(required_int(body, "big", 1, 8).error().code, "invalid_field");
  EXPECT_FALSE(required_int(body, "neg", 0, 8));
  EXPECT_FALSE(required_int(body, "s", 0, 8));
  EXPECT_FALSE(required_int(body, "missing", 0, 8));
  EXPECT_FALSE(optional_int(body, "missing", 0, 8)->has_value());
  EXPECT_EQ(*required_string(body, "s", 10), "x");
  EXPECT_FALSE(required_string(body, "n", 10));
  EXPECT_EQ(optional_string_map(body, "env", 4, 10)->at("A"), "1");
  EXPECT_FALSE(optional_string_list(body, "list", 4, 10));
  EXPECT_EQ(**optional_bool(body, "flag"), true);
  const auto error = required_int(body, "big", 1, 8).error();
  EXPECT_NE(error.message.find("'big'"), std::string::npos);
  EXPECT_EQ(http_status(error.kind), 400);
}

TEST(SuggestTest, PrefixesFirstThenTheClosestWithinTheEdits) {
  const std::vector<std::string_view> known = {"h100-80g", "h200-141g", "a100-80g"};
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(closest_names("h1", known, 2), (std::vector<std::string_view>{"h100-80g"}));
  EXPECT_EQ(closest_names("h100-8g", known, 2), (std::vector<std::string_view>{"h100-80g"}));
  // Equally close: both are offered, in the order given.
  EXPECT_EQ(closest_names("x100-80g", known, 2),
            (std::vector<std::string_view>{"h100-80g", "a100-80g"}));
  EXPECT_TRUE(closest_names("rtx-4090", known, 2).empty());
  EXPECT_EQ(did_you_mean({"a", "b"}), "; did you mean a or b?");
  EXPECT_EQ(did_you_mean({}), "");
}

TEST(AssertTest, ABrokenInvariantStopsTheProcessSayingWhereAndWhat) {
  GPURENT_ASSERT(1 + 1 == 2, "never formatted {}", 1);
  EXPECT_DEATH(GPURENT_ASSERT(1 + 1 == 3, "arithmetic {}", "broke"),
               "invariant broken at .*common_test.cc:[0-9]+: 1 \\+ 1 == 3: arithmetic broke");
}

TEST(AssertTest, ExpensiveChecksRunOnlyWhereTheyAreOn) {
  int runs = 0;
  const auto check = [&runs] {
    ++runs;
    return Status{};
  };
  set_expensive_checks(false);
  GPURENT_EXPENSIVE_CHECK(check());
  EXPECT_EQ(runs, 0);
  set_expensive_checks(true);  // as the unit tests run
  GPURENT_EXPENSIVE_CHECK(check());
  EXPECT_EQ(runs, 1);
  EXPECT_DEATH(GPURENT_EXPENSIVE_CHECK(Status(fail(Error::internal("ledger unbalanced")))),
               "ledger unbalanced");
}

}  // namespace
}  // namespace gpurent
