// The whole CLI in-process: argv in, stdout, stderr and the exit code out, against a scripted
// server on a loopback port. The environment is the test's own, so no real config file is read.
#include "cli/cli.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "client/test_http_server.h"
#include "common/json.h"

namespace gpurent::cli {
namespace {

namespace fs = std::filesystem;
using client::test_support::TestHttpServer;

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpurent-cli-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    env_["GPURENT_CONFIG"] = (dir_ / "config.toml").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  Outcome gpurent(std::vector<std::string> args) {
    args.insert(args.begin(), "gpurent");
    std::vector<const char*> argv;
    for (const auto& arg : args) argv.push_back(arg.c_str());
    std::ostringstream out;
    std::ostringstream err;
    const EnvLookup env = [this](std::string_view name) -> std::optional<std::string> {
      const auto it = env_.find(std::string(name));
      return it == env_.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    const int code = run(static_cast<int>(argv.size()), argv.data(), {out, err, env, ask_});
    return {code, out.str(), err.str()};
  }

  // Answers every request with one JSON body.
  static TestHttpServer::Handler answer(int status, const std::string& body) {
    return [status, body](const auto&, auto& connection) {
      connection.write(TestHttpServer::response(
          status, status >= 400 ? "application/problem+json" : "application/json", body));
    };
  }

  fs::path dir_;
  std::map<std::string, std::string> env_;
  Ask ask_;  // the person at the terminal; none by default
};

constexpr std::string_view kInstances = R"({"items": [
  {"id": "i-1", "name": "a", "state": "running", "gpu_type": "h100-80g", "gpu_count": 1},
  {"id": "i-2", "name": "b", "state": "terminated", "gpu_type": "h100-80g", "gpu_count": 1}
], "next_cursor": null})";

TEST_F(CliTest, PsHidesTerminatedInstancesUnlessAskedFor) {
  TestHttpServer server(answer(200, std::string(kInstances)));
  env_["GPURENT_URL"] = server.url();
  env_["GPURENT_API_KEY"] = "gpr_k";

  Outcome ps = gpurent({"ps"});
  EXPECT_EQ(ps.code, 0) << ps.err;
  EXPECT_NE(ps.out.find("i-1"), std::string::npos);
  EXPECT_EQ(ps.out.find("i-2"), std::string::npos);

  Outcome all = gpurent({"instances", "ls", "-a"});
  EXPECT_EQ(all.code, 0) << all.err;
  EXPECT_NE(all.out.find("i-2"), std::string::npos);
  EXPECT_EQ(server.requests().at(0).headers.at("authorization"), "Bearer gpr_k");
}

TEST_F(CliTest, JsonOutputIsTheItemsArray) {
  TestHttpServer server(answer(200, std::string(kInstances)));
  Outcome ps = gpurent({"--url", server.url(), "ps", "-a", "-o", "json"});
  ASSERT_EQ(ps.code, 0) << ps.err;
  EXPECT_EQ(Json::parse(ps.out), Json::parse(kInstances)["items"]);
}

TEST_F(CliTest, FlagsBeatTheEnvironment) {
  TestHttpServer server(answer(200, R"({"tenant_id": "t-1", "key_id": "k-1", "role": "admin"})"));
  env_["GPURENT_URL"] = "http://127.0.0.1:1";
  Outcome who = gpurent({"whoami", "--url", server.url(), "--api-key", "gpr_flag"});
  EXPECT_EQ(who.code, 0) << who.err;
  EXPECT_EQ(who.out, "Tenant:  t-1\nKey:     k-1\nRole:    admin\nScopes:  *\n");
  EXPECT_EQ(server.requests().at(0).headers.at("authorization"), "Bearer gpr_flag");
}

TEST_F(CliTest, ApiErrorsExitOneWithDetailAndCode) {
  TestHttpServer server(
      answer(404, R"({"code": "instance_not_found", "detail": "instance 'i-9' does not exist"})"));
  Outcome show = gpurent({"--url", server.url(), "show", "i-9"});
  EXPECT_EQ(show.code, 1);
  EXPECT_EQ(show.out, "");
  EXPECT_EQ(show.err, "error: instance 'i-9' does not exist (instance_not_found)\n");
}

TEST_F(CliTest, UnderJsonOutputAnApiErrorIsAProblemDocumentOnStdout) {
  TestHttpServer server(
      answer(404, R"({"code": "instance_not_found", "detail": "instance 'i-9' does not exist"})"));
  Outcome show = gpurent({"--url", server.url(), "-o", "json", "show", "i-9"});
  EXPECT_EQ(show.code, 1);
  EXPECT_EQ(show.err, "");
  const Json problem = Json::parse(show.out);
  EXPECT_EQ(problem["status"], 404);
  EXPECT_EQ(problem["code"], "instance_not_found");
  EXPECT_EQ(problem["detail"], "instance 'i-9' does not exist");
}

TEST_F(CliTest, AGroupWithoutItsVerbListsTheVerbs) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"quota"}, {"quota", "ls"}}) {
    Outcome outcome = gpurent(args);
    EXPECT_EQ(outcome.code, 2);
    EXPECT_NE(outcome.err.find("`gpurent quota` needs one of these"), std::string::npos)
        << outcome.err;
    EXPECT_NE(outcome.err.find("show"), std::string::npos) << outcome.err;
    EXPECT_NE(outcome.err.find("set"), std::string::npos) << outcome.err;
  }
  // A verb missing its own option is told about that option.
  Outcome launch = gpurent({"launch"});
  EXPECT_EQ(launch.code, 2);
  EXPECT_NE(launch.err.find("--gpu is required"), std::string::npos) << launch.err;
}

TEST_F(CliTest, AnUnreachableServerExitsOneAndSaysWhere) {
  std::string url;
  {
    TestHttpServer gone(answer(200, "{}"));
    url = gone.url();
  }
  Outcome offers = gpurent({"--url", url, "offers"});
  EXPECT_EQ(offers.code, 1);
  EXPECT_NE(offers.err.find(url), std::string::npos) << offers.err;
  EXPECT_NE(offers.err.find("(connection_failed)"), std::string::npos) << offers.err;
}

TEST_F(CliTest, UsageErrorsExitTwoWithoutCallingTheServer) {
  TestHttpServer server(answer(200, "{}"));
  const std::vector<std::vector<std::string>> mistakes = {
      {"topup", "t-1", "12.3456789"},
      {"topup", "t-1", "12.5", "--micros"},
      {"launch", "--gpu", "h100-80g", "--env", "NOVALUE"},
      {"launch", "--count", "two", "--gpu", "h100-80g"},
      {"launch", "--gpu", "h100-80g", "--volume", "v-1"},
      {"launch", "--gpu", "h100-80g", "--volume", ":/data"},
      {"job", "submit", "--gpu", "h100-80g", "--volume", "v-1:", "--", "true"},
      {"volumes", "create", "data"},
      {"volumes", "create", "data", "--size-gb", "0"},
      {"join-tokens", "create", "--ttl", "soon"},
      {"no-such-command"},
      {"tenants"},
      {"ps", "-o", "yaml"},
      {},
  };
  for (auto args : mistakes) {
    args.insert(args.begin(), {"--url", server.url()});
    Outcome outcome = gpurent(args);
    EXPECT_EQ(outcome.code, 2) << args.back() << ": " << outcome.err;
    EXPECT_FALSE(outcome.err.empty()) << args.back();
  }
  EXPECT_EQ(server.requests().size(), 0u);
}

TEST_F(CliTest, LaunchSendsTheCommandAfterTheSeparator) {
  TestHttpServer server(answer(201, R"({"id": "i-1", "state": "pending"})"));
  Outcome launch = gpurent({"--url", server.url(), "launch", "--gpu", "h100-80g", "--count", "2",
                            "--env", "A=1", "--env", "B=x=y", "--idempotency-key", "k1", "--",
                            "python3", "-c", "print('--not-a-flag')"});
  ASSERT_EQ(launch.code, 0) << launch.err;
  EXPECT_NE(launch.out.find("ID:"), std::string::npos);
  const auto request = server.requests().at(0);
  EXPECT_EQ(request.headers.at("idempotency-key"), "k1");
  EXPECT_EQ(Json::parse(request.body), Json::parse(R"json({"gpu_type": "h100-80g", "gpu_count": 2,
      "pricing": "on_demand", "env": {"A": "1", "B": "x=y"},
      "command": ["python3", "-c", "print('--not-a-flag')"]})json"));
}

TEST_F(CliTest, TopupParsesTheAmountExactly) {
  TestHttpServer server(answer(201, R"({"transfer_id": "x-1", "tenant_id": "t-1",
      "amount_micros": 12500000, "balance_micros": 112500000, "currency": "CNY"})"));
  Outcome topup = gpurent({"--url", server.url(), "topup", "t-1", "12.5"});
  ASSERT_EQ(topup.code, 0) << topup.err;
  EXPECT_NE(topup.out.find("Balance:   CNY 112.50"), std::string::npos) << topup.out;
  EXPECT_EQ(Json::parse(server.requests().at(0).body)["amount_micros"], 12'500'000);

  Outcome micros = gpurent({"--url", server.url(), "billing", "topup", "t-1", "7", "--micros"});
  ASSERT_EQ(micros.code, 0) << micros.err;
  EXPECT_EQ(Json::parse(server.requests().at(1).body)["amount_micros"], 7);
}

TEST_F(CliTest, LogsGoStraightToStdout) {
  TestHttpServer server([](const auto&, auto& connection) {
    connection.write(TestHttpServer::response(200, "text/plain", "epoch 1\nepoch 2\n"));
  });
  Outcome logs = gpurent({"--url", server.url(), "logs", "i-1", "-f"});
  ASSERT_EQ(logs.code, 0) << logs.err;
  EXPECT_EQ(logs.out, "epoch 1\nepoch 2\n");
  EXPECT_EQ(server.requests().at(0).target, "/v1/instances/i-1/logs?follow=true");
}

TEST_F(CliTest, JobSubmitSendsItsShapeAndCommand) {
  TestHttpServer server(answer(201, R"({"id": "j-1", "state": "queued", "array": 4})"));
  Outcome submit = gpurent({"--url", server.url(), "job", "submit", "--gpu", "h100-80g", "--array",
                            "4", "--retries", "2", "--max-runtime", "1h", "--spot", "--env", "A=1",
                            "--", "sh", "-c", "echo $GPURENT_ARRAY_INDEX"});
  ASSERT_EQ(submit.code, 0) << submit.err;
  EXPECT_NE(submit.out.find("ID:"), std::string::npos) << submit.out;
  const auto request = server.requests().at(0);
  EXPECT_EQ(request.target, "/v1/jobs");
  EXPECT_EQ(Json::parse(request.body), Json::parse(R"json({"gpu_type": "h100-80g",
      "gpu_count": 1, "pricing": "spot", "array": 4, "retries": 2, "max_runtime_s": 3600,
      "env": {"A": "1"}, "command": ["sh", "-c", "echo $GPURENT_ARRAY_INDEX"]})json"));

  Outcome no_command = gpurent({"--url", server.url(), "job", "submit", "--gpu", "h100-80g"});
  EXPECT_EQ(no_command.code, 2) << no_command.err;
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST_F(CliTest, JobLogsNameTheMember) {
  TestHttpServer server([](const auto&, auto& connection) {
    connection.write(TestHttpServer::response(200, "text/plain", "rank 1\n"));
  });
  Outcome logs =
      gpurent({"--url", server.url(), "jobs", "logs", "j-1", "--task", "2", "--rank", "1", "-f"});
  ASSERT_EQ(logs.code, 0) << logs.err;
  EXPECT_EQ(logs.out, "rank 1\n");
  EXPECT_EQ(server.requests().at(0).target, "/v1/jobs/j-1/logs?task=2&rank=1&follow=true");
}

TEST_F(CliTest, ReservationWindowFromStartAndDuration) {
  TestHttpServer server(answer(201, R"({"id": "r-1", "state": "booked"})"));
  Outcome create =
      gpurent({"--url", server.url(), "reservation", "create", "--gpu", "h100-80g", "--count", "8",
               "--start", "2027-01-15T08:00:00Z", "--duration", "2h", "--yes"});
  ASSERT_EQ(create.code, 0) << create.err;
  EXPECT_EQ(Json::parse(server.requests().at(0).body),
            Json::parse(R"({"gpu_type": "h100-80g", "gpu_count": 8,
                            "start": "2027-01-15T08:00:00.000Z",
                            "end": "2027-01-15T10:00:00.000Z"})"));

  for (const auto& window : std::vector<std::vector<std::string>>{
           {"--start", "tomorrow", "--duration", "2h"},
           {"--start", "now"},
           {"--start", "now", "--duration", "2h", "--end", "2027-01-15T10:00:00Z"}}) {
    std::vector<std::string> args = {"--url", server.url(), "reservation", "create",
                                     "--gpu", "h100-80g",   "--count",     "8"};
    args.insert(args.end(), window.begin(), window.end());
    Outcome bad = gpurent(args);
    EXPECT_EQ(bad.code, 2) << window.at(1) << ": " << bad.err;
  }
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST_F(CliTest, ABookingSaysWhatItChargesAndIsMadeOnlyIfThatIsAgreed) {
  TestHttpServer server([](const auto& request, auto& connection) {
    const bool quote = request.target == "/v1/reservations/quote";
    connection.write(TestHttpServer::response(
        quote ? 200 : 201, "application/json",
        R"({"id": "r-1", "gpu_type": "h100-80g", "gpu_count": 4, "start": "2027-01-15T08:00:00Z",
            "end": "2027-01-15T10:00:00Z", "payment": "upfront", "currency": "CNY",
            "price_per_gpu_hour_micros": 18000000, "discount_permille": 0,
            "total_micros": 144000000})"));
  });
  const std::vector<std::string> book = {"--url",   server.url(), "reservation", "create",
                                         "--gpu",   "h100-80g",   "--count",     "4",
                                         "--start", "+1h",        "--duration",  "2h"};
  // Nobody to ask (a script): refused, saying what it would take and how to go ahead.
  Outcome unasked = gpurent(book);
  EXPECT_EQ(unasked.code, 2);
  EXPECT_NE(unasked.err.find("takes CNY 144.00 from your balance now"), std::string::npos)
      << unasked.err;
  EXPECT_NE(unasked.err.find("--yes"), std::string::npos);
  std::vector<std::string> questions;
  std::string answer = "n";
  ask_ = [&](std::string_view question) -> std::optional<std::string> {
    questions.emplace_back(question);
    return answer;
  };
  Outcome declined = gpurent(book);
  EXPECT_EQ(declined.code, 1);
  EXPECT_NE(declined.err.find("nothing was done"), std::string::npos) << declined.err;
  ASSERT_EQ(questions.size(), 1u);
  EXPECT_TRUE(questions[0].ends_with("Book it? [y/N] ")) << questions[0];
  answer = "y";
  Outcome agreed = gpurent(book);
  EXPECT_EQ(agreed.code, 0) << agreed.err;
  // Three quotes, one booking.
  std::vector<std::string> targets;
  for (const auto& request : server.requests()) targets.push_back(request.target);
  EXPECT_EQ(targets, (std::vector<std::string>{"/v1/reservations/quote", "/v1/reservations/quote",
                                               "/v1/reservations/quote", "/v1/reservations"}));
}

TEST_F(CliTest, CompletionOffersTheCommandsAndFlagsTheWordsLeadTo) {
  const auto complete = [&](std::vector<std::string> words) {
    words.insert(words.begin(), "__complete");
    Outcome outcome = gpurent(words);
    EXPECT_EQ(outcome.code, 0) << outcome.err;
    return outcome.out;
  };
  EXPECT_EQ(complete({"ins"}), "instances\n");
  EXPECT_EQ(complete({"instances", "s"}), "show\nstop\nstart\n");
  // Flags of the command and, falling through, the global ones.
  const std::string flags = complete({"launch", "--gpu", "h100-80g", "--wa"});
  EXPECT_NE(flags.find("--wait\n"), std::string::npos) << flags;
  EXPECT_NE(flags.find("--wait-for-capacity\n"), std::string::npos) << flags;
  EXPECT_EQ(complete({"ps", "--ur"}), "--url\n");
  // A flag's value, and the user's command after --, are the user's own.
  EXPECT_EQ(complete({"launch", "--gpu", ""}), "");
  EXPECT_EQ(complete({"launch", "--gpu", "h100-80g", "--", "py"}), "");
  // Internal commands are never offered.
  EXPECT_EQ(complete({"__"}), "");

  Outcome bash = gpurent({"completion", "bash"});
  ASSERT_EQ(bash.code, 0);
  EXPECT_NE(bash.out.find("complete -o default -F _gpurent gpurent"), std::string::npos);
  EXPECT_EQ(gpurent({"completion", "tcsh"}).code, 2);
}

TEST_F(CliTest, ReserveBooksATermAndLaunchRunsOnIt) {
  TestHttpServer server(answer(201, R"({"id": "r-1", "state": "active"})"));
  Outcome reserve = gpurent({"--url", server.url(), "reserve", "--gpu", "h100-80g", "--count", "8",
                             "--start", "2027-01-15T08:00:00Z", "--days", "30", "--monthly", "-y"});
  ASSERT_EQ(reserve.code, 0) << reserve.err;
  EXPECT_EQ(Json::parse(server.requests().at(0).body),
            Json::parse(R"({"gpu_type": "h100-80g", "gpu_count": 8, "term_days": 30,
                            "start": "2027-01-15T08:00:00.000Z", "payment": "monthly"})"));

  Outcome launch = gpurent({"--url", server.url(), "launch", "--gpu", "h100-80g", "--count", "8",
                            "--reservation", "r-1", "--", "sleep", "1"});
  ASSERT_EQ(launch.code, 0) << launch.err;
  const Json body = Json::parse(server.requests().at(1).body);
  EXPECT_EQ(body["pricing"], "reserved");
  EXPECT_EQ(body["reservation_id"], "r-1");

  Outcome both = gpurent({"--url", server.url(), "launch", "--gpu", "h100-80g", "--spot",
                          "--reservation", "r-1", "--", "sleep", "1"});
  EXPECT_EQ(both.code, 2) << both.err;
  Outcome two_ends = gpurent({"--url", server.url(), "reserve", "--gpu", "h100-80g", "--count", "1",
                              "--days", "7", "--duration", "2h"});
  EXPECT_EQ(two_ends.code, 2) << two_ends.err;
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST_F(CliTest, BillingSettingsKeepTheSettingNotGiven) {
  TestHttpServer server([](const TestHttpServer::Request& request, auto& connection) {
    const std::string body = request.method == "PUT" ? request.body : R"({"tenant_id": "t-1",
        "currency": "CNY", "warning_threshold_micros": 10000000, "credit_limit_micros": 5000000,
        "below_warning_threshold": false})";
    connection.write(TestHttpServer::response(200, "application/json", body));
  });
  Outcome set = gpurent({"--url", server.url(), "billing", "settings", "--warning", "20"});
  ASSERT_EQ(set.code, 0) << set.err;
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].target, "/v1/billing/settings");
  EXPECT_EQ(requests[1].method, "PUT");
  EXPECT_EQ(Json::parse(requests[1].body),
            Json::parse(R"({"tenant_id": "t-1", "warning_threshold_micros": 20000000,
                            "credit_limit_micros": 5000000})"));
}

TEST_F(CliTest, QuotaSetKeepsTheLimitsItDoesNotName) {
  TestHttpServer server([](const TestHttpServer::Request& request, auto& connection) {
    const std::string body = request.method == "PUT" ? request.body : R"({"tenant_id": "t-1",
        "max_gpus_per_type": {"h100-80g": 2, "a100-80g": 4}, "max_instances": 10,
        "max_array": 100, "weight": 1})";
    connection.write(TestHttpServer::response(200, "application/json", body));
  });
  Outcome set = gpurent({"--url", server.url(), "quota", "set", "t-1", "--max-gpus",
                         "a100-80g=none", "--max-gpus", "l4-24g=1", "--max-instances", "none",
                         "--max-queued", "50", "--weight", "3"});
  ASSERT_EQ(set.code, 0) << set.err;
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].target, "/v1/tenants/t-1/quota");
  EXPECT_EQ(requests[1].method, "PUT");
  EXPECT_EQ(Json::parse(requests[1].body),
            Json::parse(R"({"max_gpus_per_type": {"h100-80g": 2, "l4-24g": 1},
                            "max_queued": 50, "max_array": 100, "weight": 3})"));

  Outcome bad = gpurent({"--url", server.url(), "quota", "set", "t-1", "--max-gpus", "h100-80g"});
  EXPECT_EQ(bad.code, 2) << bad.err;
}

TEST_F(CliTest, VolumesAreCreatedListedDeletedAndMountedByLaunch) {
  TestHttpServer server([](const TestHttpServer::Request& request, auto& connection) {
    if (request.method == "DELETE") {
      connection.write(TestHttpServer::response(204, "application/json", ""));
    } else if (request.target.starts_with("/v1/volumes?")) {
      connection.write(TestHttpServer::response(200, "application/json", R"({"items": [
          {"id": "v-1", "name": "data", "size_gb": 100, "node_id": null, "state": "available"}],
          "next_cursor": null})"));
    } else {
      connection.write(TestHttpServer::response(201, "application/json",
                                                R"({"id": "v-1", "name": "data",
          "size_gb": 100, "state": "available"})"));
    }
  });
  Outcome create =
      gpurent({"--url", server.url(), "volumes", "create", "data", "--size-gb", "100"});
  ASSERT_EQ(create.code, 0) << create.err;
  EXPECT_NE(create.out.find("100 GB"), std::string::npos) << create.out;
  Outcome list = gpurent({"--url", server.url(), "volumes", "list"});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_NE(list.out.find("v-1"), std::string::npos) << list.out;
  Outcome removed = gpurent({"--url", server.url(), "volumes", "delete", "v-1"});
  ASSERT_EQ(removed.code, 0) << removed.err;
  EXPECT_EQ(removed.out, "deleted volume v-1\n");
  Outcome launch = gpurent({"--url", server.url(), "launch", "--gpu", "h100-80g", "--volume",
                            "v-1:/data", "--volume", "v-2:/mnt/scratch", "--", "true"});
  ASSERT_EQ(launch.code, 0) << launch.err;

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/volumes");
  EXPECT_EQ(Json::parse(requests[0].body), Json::parse(R"({"name": "data", "size_gb": 100})"));
  EXPECT_EQ(requests[1].target, "/v1/volumes?limit=500");
  EXPECT_EQ(requests[2].method, "DELETE");
  EXPECT_EQ(requests[2].target, "/v1/volumes/v-1");
  EXPECT_EQ(Json::parse(requests[3].body)["volumes"],
            Json::parse(R"([{"volume_id": "v-1", "mount_path": "/data"},
                            {"volume_id": "v-2", "mount_path": "/mnt/scratch"}])"));
}

TEST_F(CliTest, NodesAloneLists) {
  TestHttpServer server(answer(200, R"({"items": [], "next_cursor": null})"));
  Outcome nodes = gpurent({"--url", server.url(), "nodes"});
  ASSERT_EQ(nodes.code, 0) << nodes.err;
  EXPECT_EQ(server.requests().at(0).target, "/v1/nodes?limit=500");
}

TEST_F(CliTest, Version) {
  Outcome version = gpurent({"version"});
  EXPECT_EQ(version.code, 0);
  EXPECT_EQ(version.out, fmt::format("gpurent {}\n", kVersion));
}

}  // namespace
}  // namespace gpurent::cli
