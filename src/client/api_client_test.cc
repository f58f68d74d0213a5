#include "client/api_client.h"

#include <gtest/gtest.h>

#include "client/test_http_server.h"

namespace gpurent::client {
namespace {

using test_support::TestHttpServer;

ApiClient make_client(const TestHttpServer& server, std::string key = "gpr_secret") {
  auto client = ApiClient::create(server.url(), std::move(key));
  EXPECT_TRUE(client.has_value());
  return std::move(*client);
}

void answer_json(TestHttpServer::Connection& connection, int status, const Json& body) {
  connection.write(TestHttpServer::response(
      status, status >= 400 ? "application/problem+json" : "application/json", body.dump()));
}

TEST(ErrorFromResponseTest, MapsAProblemDocument) {
  const Json problem = {{"type", "urn:gpurent:problem:unknown_gpu_type"},
                        {"title", "Unprocessable Content"},
                        {"status", 422},
                        {"code", "unknown_gpu_type"},
                        {"detail", "GPU type 'h900' does not exist"}};
  const Error error = error_from_response(
      {.status = 422, .content_type = "application/problem+json", .body = problem.dump()},
      "POST http://h:1/v1/instances");
  EXPECT_EQ(error.kind, ErrorKind::kUnprocessable);
  EXPECT_EQ(error.code, "unknown_gpu_type");
  EXPECT_EQ(error.message, "GPU type 'h900' does not exist");
}

TEST(ErrorFromResponseTest, MapsEveryDocumentedStatus) {
  const std::pair<int, ErrorKind> cases[] = {
      {400, ErrorKind::kInvalidArgument}, {401, ErrorKind::kUnauthenticated},
      {402, ErrorKind::kPaymentRequired}, {403, ErrorKind::kPermissionDenied},
      {404, ErrorKind::kNotFound},        {405, ErrorKind::kMethodNotAllowed},
      {409, ErrorKind::kConflict},        {413, ErrorKind::kPayloadTooLarge},
      {422, ErrorKind::kUnprocessable},   {503, ErrorKind::kUnavailable},
      {500, ErrorKind::kInternal},        {418, ErrorKind::kInvalidArgument},
  };
  for (const auto& [status, kind] : cases) {
    const Error error = error_from_response({.status = status, .body = R"({"code":"x"})"}, "GET u");
    EXPECT_EQ(error.kind, kind) << status;
    EXPECT_EQ(error.code, "x");
  }
}

TEST(ErrorFromResponseTest, DescribesAnAnswerThatIsNoProblemDocument) {
  const Error error = error_from_response({.status = 502,
                                           .content_type = "text/html",
                                           .body = "<html>Bad Gateway\x1b[31m</html>\nmore"},
                                          "GET http://h:1/v1/offers");
  EXPECT_EQ(error.kind, ErrorKind::kUnavailable);
  EXPECT_EQ(error.code, "http_502");
  EXPECT_EQ(error.message,
            "GET http://h:1/v1/offers answered HTTP 502: <html>Bad Gateway [31m</html>");
}

TEST(ApiClientTest, SendsTheKeyAndDecodesObjects) {
  TestHttpServer server([](const auto&, auto& connection) {
    answer_json(connection, 200, {{"tenant_id", "t-1"}, {"key_id", "k-1"}, {"role", "admin"}});
  });
  ApiClient client = make_client(server);
  auto who = client.access().whoami();
  ASSERT_TRUE(who.has_value()) << who.error().message;
  EXPECT_EQ(who->value.role, model::Role::kAdmin);
  EXPECT_EQ(who->value.tenant_id, "t-1");
  EXPECT_EQ(who->json["role"], "admin");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target, "/v1/whoami");
  EXPECT_EQ(requests[0].headers.at("authorization"), "Bearer gpr_secret");
}

TEST(ApiClientTest, TurnsAProblemIntoAnError) {
  TestHttpServer server([](const auto&, auto& connection) {
    answer_json(connection, 404,
                {{"code", "instance_not_found"}, {"detail", "instance 'i-x' does not exist"}});
  });
  ApiClient client = make_client(server);
  auto instance = client.instances().get("i-x");
  ASSERT_FALSE(instance.has_value());
  EXPECT_EQ(instance.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(instance.error().code, "instance_not_found");
  EXPECT_EQ(instance.error().message, "instance 'i-x' does not exist");
}

TEST(ApiClientTest, JoinsEveryPageOfAList) {
  TestHttpServer server([](const TestHttpServer::Request& request, auto& connection) {
    if (request.target.find("cursor=c2") != std::string::npos) {
      answer_json(connection, 200, {{"items", {{{"id", "i-3"}}}}, {"next_cursor", nullptr}});
    } else {
      answer_json(connection, 200,
                  {{"items", {{{"id", "i-1"}}, {{"id", "i-2"}}}}, {"next_cursor", "c2"}});
    }
  });
  ApiClient client = make_client(server);
  auto items = client.instances().list({.tenant_id = "t 1", .state = "running"});
  ASSERT_TRUE(items.has_value()) << items.error().message;
  ASSERT_EQ(items->value.size(), 3u);
  EXPECT_EQ(items->value[2].id, "i-3");
  EXPECT_EQ(items->json[2]["id"], "i-3");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].target, "/v1/instances?limit=500&tenant=t%201&state=running");
  EXPECT_EQ(requests[1].target, "/v1/instances?limit=500&tenant=t%201&state=running&cursor=c2");
}

// An answer is read leniently (a server of another version): what it leaves out or types
// otherwise keeps its default, what it adds stays in the JSON.
TEST(ApiClientTest, ReadsATypedAnswerFromAServerOfAnotherVersion) {
  TestHttpServer server([](const auto&, auto& connection) {
    answer_json(connection, 200,
                {{"id", "n-1"},
                 {"state", "resting"},
                 {"gpu_count", "eight"},
                 {"free_gpus", 3},
                 {"clock_skew_ms", nullptr},
                 {"last_heartbeat", "2026-11-30T15:29:58.000Z"},
                 {"gpus", {{{"uuid", "GPU-a"}, {"type", "h100-80g"}}, 7}},
                 {"new_member", true}});
  });
  ApiClient client = make_client(server);
  auto node = client.nodes().get("n-1");
  ASSERT_TRUE(node.has_value()) << node.error().message;
  EXPECT_EQ(node->value.id, "n-1");
  EXPECT_EQ(node->value.state, model::NodeState::kReady);  // an unknown state: the default
  EXPECT_EQ(node->value.gpu_count, 0);
  EXPECT_EQ(node->value.free_gpus, 3);
  EXPECT_FALSE(node->value.clock_skew_ms);
  EXPECT_EQ(node->value.last_heartbeat, *parse_rfc3339("2026-11-30T15:29:58.000Z"));
  ASSERT_EQ(node->value.gpus.size(), 1u);  // an item that is no object is left out
  EXPECT_EQ(node->value.gpus[0].type, "h100-80g");
  EXPECT_EQ(node->value.gpus[0].nvlink_domain, -1);
  EXPECT_EQ(node->json["new_member"], true);
}

TEST(ApiClientTest, RefusesAListWithoutItems) {
  TestHttpServer server([](const auto&, auto& connection) {
    answer_json(connection, 200, {{"data", 1}});
  });
  ApiClient client = make_client(server);
  auto nodes = client.nodes().list();
  ASSERT_FALSE(nodes.has_value());
  EXPECT_EQ(nodes.error().code, "bad_response");
}

TEST(ApiClientTest, LaunchesWithTheDocumentedBody) {
  TestHttpServer server([](const auto&, auto& connection) {
    answer_json(connection, 201, {{"id", "i-1"}, {"state", "pending"}});
  });
  ApiClient client = make_client(server);
  model::InstanceSpec spec;
  spec.name = "train-1";
  spec.gpu_types = {"h100-80g"};
  spec.gpu_count = 2;
  spec.command = {"python3", "train.py"};
  spec.env = {{"EPOCHS", "3"}};
  auto instance = client.instances().create(spec, "launch-42");
  ASSERT_TRUE(instance.has_value()) << instance.error().message;
  EXPECT_EQ(instance->value.id, "i-1");
  EXPECT_EQ(instance->value.state, model::InstanceState::kPending);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/instances");
  EXPECT_EQ(requests[0].headers.at("idempotency-key"), "launch-42");
  EXPECT_EQ(Json::parse(requests[0].body),
            Json::parse(R"({"name": "train-1", "gpu_type": "h100-80g", "gpu_count": 2,
                            "command": ["python3", "train.py"], "env": {"EPOCHS": "3"},
                            "pricing": "on_demand"})"));
}

TEST(ApiClientTest, EncodesIdsInPaths) {
  TestHttpServer server(
      [](const auto&, auto& connection) { answer_json(connection, 202, Json::object()); });
  ApiClient client = make_client(server);
  ASSERT_TRUE(client.instances().stop("../x?y").has_value());
  EXPECT_EQ(server.requests().at(0).target, "/v1/instances/..%2Fx%3Fy/stop");
}

TEST(ApiClientTest, TopsUpInMicros) {
  TestHttpServer server([](const auto&, auto& connection) {
    answer_json(connection, 201, {{"transfer_id", "x-1"}, {"balance_micros", 12'500'000}});
  });
  ApiClient client = make_client(server);
  ASSERT_TRUE(
      client.billing().topup({.tenant_id = "t-1", .amount_micros = 12'500'000}).has_value());
  EXPECT_EQ(Json::parse(server.requests().at(0).body),
            Json::parse(R"({"tenant_id": "t-1", "amount_micros": 12500000})"));
}

TEST(ApiClientTest, StreamsLogsAndReportsTheirErrors) {
  TestHttpServer server([](const TestHttpServer::Request& request, auto& connection) {
    if (request.target == "/v1/instances/i-1/logs?follow=true") {
      connection.write(TestHttpServer::response(200, "text/plain", "line 1\nline 2\n"));
    } else {
      answer_json(connection, 404, {{"code", "instance_not_found"}, {"detail", "gone"}});
    }
  });
  ApiClient client = make_client(server);
  std::string text;
  const auto collect = [&text](std::string_view piece) {
    text.append(piece);
    return true;
  };
  auto followed = client.instances().stream_logs("i-1", true, collect);
  ASSERT_TRUE(followed.has_value()) << followed.error().message;
  EXPECT_EQ(text, "line 1\nline 2\n");

  text.clear();
  auto missing = client.instances().stream_logs("i-2", false, collect);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, "instance_not_found");
  EXPECT_EQ(text, "");  // the problem document is not log text
}

TEST(ApiClientTest, SubmitsJobsWithTheDocumentedBody) {
  TestHttpServer server([](const auto&, auto& connection) {
    answer_json(connection, 201, {{"id", "j-1"}, {"state", "queued"}});
  });
  ApiClient client = make_client(server);
  model::JobSpec spec;
  spec.task.gpu_types = {"h100-80g"};
  spec.task.gpu_count = 8;
  spec.task.command = {"torchrun", "train.py"};
  spec.task.max_runtime_s = 3600;
  spec.nodes = 2;
  spec.array = 3;
  spec.retries = 1;
  ASSERT_TRUE(client.jobs().create(spec, "job-7").has_value());
  const auto request = server.requests().at(0);
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.target, "/v1/jobs");
  EXPECT_EQ(request.headers.at("idempotency-key"), "job-7");
  EXPECT_EQ(Json::parse(request.body),
            Json::parse(R"({"gpu_type": "h100-80g", "gpu_count": 8, "pricing": "on_demand",
                            "command": ["torchrun", "train.py"], "max_runtime_s": 3600,
                            "nodes": 2, "array": 3, "retries": 1})"));
}

TEST(ApiClientTest, AddressesJobsReservationsAndQuotas) {
  TestHttpServer server([](const TestHttpServer::Request& request, auto& connection) {
    if (request.target.ends_with("/logs?task=3&rank=1&follow=true")) {
      connection.write(TestHttpServer::response(200, "text/plain", "rank 1\n"));
    } else if (request.target.starts_with("/v1/reservations?") ||
               request.target.starts_with("/v1/jobs?")) {
      answer_json(connection, 200, {{"items", Json::array()}, {"next_cursor", nullptr}});
    } else {
      answer_json(connection, 200, Json::object());
    }
  });
  ApiClient client = make_client(server);
  ASSERT_TRUE(client.jobs().get("j/1", true).has_value());
  ASSERT_TRUE(client.jobs().cancel("j-1").has_value());
  ASSERT_TRUE(client.jobs().list("t-1").has_value());
  std::string text;
  ASSERT_TRUE(client.jobs()
                  .stream_logs("j-1", {.task = 3, .rank = 1}, true,
                               [&text](std::string_view piece) {
                                 text.append(piece);
                                 return true;
                               })
                  .has_value());
  EXPECT_EQ(text, "rank 1\n");
  ASSERT_TRUE(client.reservations()
                  .create({.gpu_type = "h100-80g",
                           .gpu_count = 8,
                           .start = from_unix_ms(1'800'000'000'000),
                           .end = from_unix_ms(1'800'007'200'000)})
                  .has_value());
  ASSERT_TRUE(client.reservations().list().has_value());
  ASSERT_TRUE(client.reservations().cancel("r-1").has_value());
  ASSERT_TRUE(client.access().set_quota("t-1", {.weight = 2}).has_value());
  ASSERT_TRUE(client.access().get_quota("t-1").has_value());

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 9u);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"GET", "/v1/jobs/j%2F1?tasks=1"},
      {"POST", "/v1/jobs/j-1/cancel"},
      {"GET", "/v1/jobs?limit=500&tenant=t-1"},
      {"GET", "/v1/jobs/j-1/logs?task=3&rank=1&follow=true"},
      {"POST", "/v1/reservations"},
      {"GET", "/v1/reservations?limit=500"},
      {"DELETE", "/v1/reservations/r-1"},
      {"PUT", "/v1/tenants/t-1/quota"},
      {"GET", "/v1/tenants/t-1/quota"}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(requests[i].method, expected[i].first) << i;
    EXPECT_EQ(requests[i].target, expected[i].second) << i;
  }
  EXPECT_EQ(Json::parse(requests[4].body), Json::parse(R"({"gpu_type": "h100-80g", "gpu_count": 8,
                            "start": "2027-01-15T08:00:00.000Z",
                            "end": "2027-01-15T10:00:00.000Z"})"));
  EXPECT_EQ(Json::parse(requests[7].body), Json::parse(R"({"weight": 2})"));
}

// A group is a view of its client's one connection: a move of the client leaves it valid, and the
// client's other groups send over the same connection with the same key.
TEST(ApiClientTest, GroupsShareTheConnectionAndSurviveAMoveOfTheClient) {
  TestHttpServer server([](const TestHttpServer::Request& request, auto& connection) {
    if (request.target.starts_with("/v1/nodes?")) {
      answer_json(connection, 200, {{"items", Json::array()}, {"next_cursor", nullptr}});
    } else {
      answer_json(connection, 200, {{"role", "operator"}});
    }
  });
  ApiClient first = make_client(server);
  NodesApi nodes = first.nodes();
  ApiClient moved = std::move(first);
  ASSERT_TRUE(nodes.list().has_value());
  ASSERT_TRUE(moved.access().whoami().has_value());
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].target, "/v1/nodes?limit=500");
  EXPECT_EQ(requests[1].target, "/v1/whoami");
  for (const auto& request : requests) {
    EXPECT_EQ(request.headers.at("authorization"), "Bearer gpr_secret");
    EXPECT_EQ(request.connection, 1);  // one kept-alive connection
  }
  EXPECT_EQ(server.connections(), 1);
}

TEST(ApiClientTest, NamesTheUrlOfAnUnreachableServer) {
  std::string url;
  {
    TestHttpServer gone([](const auto&, auto&) {});
    url = gone.url();
  }
  auto client = ApiClient::create(url, "");
  ASSERT_TRUE(client.has_value());
  auto offers = client->catalog().offers();
  ASSERT_FALSE(offers.has_value());
  EXPECT_EQ(offers.error().kind, ErrorKind::kUnavailable);
  EXPECT_NE(offers.error().message.find(url), std::string::npos) << offers.error().message;
}

}  // namespace
}  // namespace gpurent::client
