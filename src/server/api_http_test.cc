#include "server/api_http.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpurent::server {
namespace {

Request with_query(std::string name, std::string value) {
  Request request;
  request.query.emplace(std::move(name), std::move(value));
  return request;
}

TEST(QueryIntTest, AbsentOrEmptyIsTheFallback) {
  EXPECT_EQ(*query_int(Request{}, "limit", 100, 1, 500), 100);
  EXPECT_EQ(*query_int(with_query("limit", ""), "limit", 100, 1, 500), 100);
}

TEST(QueryIntTest, ReadsAnIntegerInItsRange) {
  EXPECT_EQ(*query_int(with_query("limit", "1"), "limit", 100, 1, 500), 1);
  EXPECT_EQ(*query_int(with_query("limit", "500"), "limit", 100, 1, 500), 500);
}

TEST(QueryIntTest, RefusesWhatIsOutOfRangeOrNotAnInteger) {
  for (const char* bad : {"0", "501", "-3", "12abc", "1.5", " 7", "99999999999999999999"}) {
    const auto value = query_int(with_query("limit", bad), "limit", 100, 1, 500);
    ASSERT_FALSE(value) << bad;
    EXPECT_EQ(value.error().code, "invalid_query");
    EXPECT_NE(value.error().message.find("'limit'"), std::string::npos) << value.error().message;
    EXPECT_NE(value.error().message.find("between 1 and 500"), std::string::npos);
  }
}

TEST(QueryFlagTest, ReadsTrueAndFalseInBothSpellings) {
  EXPECT_TRUE(*query_flag(with_query("wait", "1"), "wait", false));
  EXPECT_TRUE(*query_flag(with_query("wait", "true"), "wait", false));
  EXPECT_FALSE(*query_flag(with_query("wait", "0"), "wait", true));
  EXPECT_FALSE(*query_flag(with_query("wait", "false"), "wait", true));
  EXPECT_TRUE(*query_flag(Request{}, "wait", true));
  const auto bad = query_flag(with_query("wait", "yes"), "wait", false);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "invalid_query");
}

TEST(QueryStringTest, AnEmptyValueIsAbsent) {
  EXPECT_EQ(query_string(with_query("cursor", "i-1"), "cursor"), "i-1");
  EXPECT_EQ(query_string(with_query("cursor", ""), "cursor"), std::nullopt);
  EXPECT_EQ(query_string(Request{}, "cursor"), std::nullopt);
}

TEST(BearerTokenTest, TakesTheTokenOfABearerHeaderOnly) {
  Request request;
  request.authorization = "Bearer gpr_abc";
  EXPECT_EQ(bearer_token(request), "gpr_abc");
  const std::vector<std::string> refused = {"", "Bearer ", "Basic dXNlcjpwYXNz", "bearer gpr_abc",
                                            "Bearer " + std::string(257, 'x')};
  for (const std::string& bad : refused) {
    request.authorization = bad;
    EXPECT_EQ(bearer_token(request), std::nullopt) << bad;
  }
  request.authorization = "Bearer " + std::string(256, 'x');
  EXPECT_EQ(bearer_token(request)->size(), 256u);
}

TEST(IdempotencyKeyTest, IsOptionalAndAtMost128Characters) {
  Request request;
  EXPECT_EQ(*idempotency_key(request), std::nullopt);
  request.idempotency_key = std::string(128, 'k');
  EXPECT_EQ(*idempotency_key(request), std::string(128, 'k'));
  request.idempotency_key = std::string(129, 'k');
  const auto too_long = idempotency_key(request);
  ASSERT_FALSE(too_long);
  EXPECT_EQ(too_long.error().code, "invalid_header");
}

TEST(CreatedResponseTest, SaysWhereTheObjectIsAndWhetherItWasAReplay) {
  const Response first = created_response(Json{{"id", "v-1"}}, "/v1/volumes/v-1", false);
  EXPECT_EQ(first.status, 201);
  EXPECT_EQ(Json::parse(first.body)["id"], "v-1");
  ASSERT_EQ(first.headers.size(), 1u);
  EXPECT_EQ(first.headers[0], (std::pair<std::string, std::string>{"Location", "/v1/volumes/v-1"}));
  const Response replay = created_response(Json{{"id", "v-1"}}, "/v1/volumes/v-1", true);
  ASSERT_EQ(replay.headers.size(), 2u);
  EXPECT_EQ(replay.headers[1].first, "Idempotent-Replayed");
}

TEST(ResultResponseTest, AnErrorBecomesAProblem) {
  const Result<int> missing = fail(Error{ErrorKind::kNotFound, "instance_not_found", "no such"});
  const Response problem = result_response(200, missing, [](int v) { return Json(v); });
  EXPECT_EQ(problem.status, 404);
  EXPECT_EQ(problem.content_type, "application/problem+json");
  const Response ok = result_response(200, Result<int>(7), [](int v) { return Json(v * 2); });
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "14");
}

}  // namespace
}  // namespace gpurent::server
