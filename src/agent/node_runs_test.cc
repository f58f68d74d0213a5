#include "agent/node_runs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "agent/node_api.h"
#include "agent/test_util.h"
#include "client/http_client.h"
#include "common/json.h"

namespace gpurent::agent {
namespace {

using testing::TempDir;

TEST(NodeRunsTest, ServiceEnvironment) {
  const RunServices services{{{"jupyter", 40001}, {"tensor-board", 40002}}, "tok"};
  const auto env = service_env("i-abc", services);
  EXPECT_EQ(env.at("GPURENT_PORT_JUPYTER"), "40001");
  EXPECT_EQ(env.at("GPURENT_BASE_URL_JUPYTER"), "/i/i-abc/jupyter/");
  EXPECT_EQ(env.at("GPURENT_PORT_TENSOR_BOARD"), "40002");
  EXPECT_EQ(env.at("GPURENT_BASE_URL_TENSOR_BOARD"), "/i/i-abc/tensor-board/");
  EXPECT_EQ(env.at("GPURENT_SERVICE_TOKEN"), "tok");
  EXPECT_EQ(env.size(), 5u);
}

TEST(NodeRunsTest, BindsDistinctFreePortsAndARandomTokenKeptAcrossAgentRestarts) {
  TempDir dir;
  const WorkloadKey key{"i-a", 2};
  RunServices bound;
  {
    auto runs = NodeRuns::open(dir.path());
    ASSERT_TRUE(runs);
    auto services = (*runs)->bind_services(key, {"jupyter", "board"});
    ASSERT_TRUE(services) << services.error().message;
    bound = *services;
    EXPECT_EQ(bound.ports.size(), 2u);
    EXPECT_NE(bound.ports.at("jupyter"), bound.ports.at("board"));
    EXPECT_GE(bound.token.size(), 32u);
    // Asked again (a retried start): the same binding.
    EXPECT_EQ((*runs)->bind_services(key, {"jupyter", "board"})->token, bound.token);
    auto other = (*runs)->bind_services({"i-b", 1}, {"jupyter"});
    ASSERT_TRUE(other);
    EXPECT_NE(other->token, bound.token);
    EXPECT_NE(other->ports.at("jupyter"), bound.ports.at("jupyter"));
    struct stat info {};
    ASSERT_EQ(::stat((dir.path() / "services" / "i-a.2.json").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u);  // the token is a secret
  }
  // A restarted agent finds them again, and learns which runs run from the reconciler.
  auto runs = NodeRuns::open(dir.path());
  ASSERT_TRUE(runs);
  EXPECT_FALSE((*runs)->find(key));  // nothing published yet
  (*runs)->publish({{key, true, RunPlace::kProcess}});
  const auto view = (*runs)->find(key);
  ASSERT_TRUE(view && view->services);
  EXPECT_TRUE(view->running);
  EXPECT_EQ(view->services->token, bound.token);
  EXPECT_EQ(view->services->ports, bound.ports);
  // i-b.1 was not among the published runs: its binding and record are gone.
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "services" / "i-b.1.json"));
  (*runs)->release(key);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "services" / "i-a.2.json"));
  EXPECT_FALSE((*runs)->find(key)->services);
}

TEST(NodeRunsTest, FreeLoopbackPortsAvoidTheTakenOnes) {
  auto first = free_loopback_port({});
  ASSERT_TRUE(first);
  auto second = free_loopback_port({*first});
  ASSERT_TRUE(second);
  EXPECT_NE(*first, *second);
}

class NodeApiForwardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto runs = NodeRuns::open(dir_.path());
    ASSERT_TRUE(runs);
    runs_ = std::move(*runs);
    auto services = runs_->bind_services({"i-a", 3}, {"jupyter"});
    ASSERT_TRUE(services);
    services_ = *services;
    runs_->publish(
        {{{"i-a", 3}, true, RunPlace::kProcess}, {{"i-b", 1}, false, RunPlace::kProcess}});
  }

  net::RequestHead head(std::string path, std::string run,
                        std::vector<std::pair<std::string, std::string>> headers = {}) {
    net::RequestHead head;
    head.method = "GET";
    head.target = path + "?x=1";
    head.path = std::move(path);
    head.headers = std::move(headers);
    head.headers.emplace_back(std::string(kRunHeader), std::move(run));
    return head;
  }

  int refused_with(const net::ForwardDecision& decision) {
    const auto* answer = std::get_if<net::Response>(&decision);
    return answer ? answer->status : 0;
  }

  TempDir dir_;
  std::unique_ptr<NodeRuns> runs_;
  RunServices services_;
};

TEST_F(NodeApiForwardTest, ForwardsToTheRunsPortWithItsTokenAndLoopbackHost) {
  const auto decision =
      service_forward(head("/i/i-a/jupyter/api/kernels", "3",
                           {{"Host", "gpu.example:8080"}, {"Origin", "http://gpu.example:8080"}}),
                      *runs_);
  const auto* to = std::get_if<net::ForwardTo>(&decision);
  ASSERT_TRUE(to);
  const std::string self = fmt::format("127.0.0.1:{}", services_.ports.at("jupyter"));
  EXPECT_EQ(to->host, "127.0.0.1");
  EXPECT_EQ(to->port, services_.ports.at("jupyter"));
  EXPECT_EQ(to->target, "/i/i-a/jupyter/api/kernels?x=1");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"Authorization", "token " + services_.token}, {"Host", self}, {"Origin", "http://" + self}};
  EXPECT_EQ(to->set_headers, expected);
  EXPECT_EQ(to->remove_headers, std::vector<std::string>{std::string(kRunHeader)});
}

TEST_F(NodeApiForwardTest, RefusesWhatItCannotForward) {
  EXPECT_EQ(refused_with(service_forward(head("/i/i-a/jupyter/", "2"), *runs_)), 404);  // old run
  EXPECT_EQ(refused_with(service_forward(head("/i/i-b/jupyter/", "1"), *runs_)), 409);  // stopped
  EXPECT_EQ(refused_with(service_forward(head("/i/i-a/board/", "3"), *runs_)), 404);
  EXPECT_EQ(refused_with(service_forward(head("/i/i-a/jupyter/", "x"), *runs_)), 400);
  EXPECT_EQ(refused_with(service_forward(head("/i/i-a/jupyter/", ""), *runs_)), 400);
  EXPECT_EQ(refused_with(service_forward(head("/i/i-a", "3"), *runs_)), 404);
}

TEST(NodeApiTest, TheSecretIsComparedWhole) {
  EXPECT_TRUE(presents_secret("Bearer gna_abc", "gna_abc"));
  EXPECT_FALSE(presents_secret("Bearer gna_ab", "gna_abc"));
  EXPECT_FALSE(presents_secret("Bearer gna_abcd", "gna_abc"));
  EXPECT_FALSE(presents_secret("token gna_abc", "gna_abc"));
  EXPECT_FALSE(presents_secret("", ""));
  EXPECT_FALSE(presents_secret("Bearer ", ""));
  EXPECT_EQ(host_port("10.0.0.1", 80), "10.0.0.1:80");
  EXPECT_EQ(host_port("fd00::1", 80), "[fd00::1]:80");
}

}  // namespace
}  // namespace gpurent::agent

namespace gpurent::agent {
namespace {

// The node API itself, over HTTP: its secret, and the exec route's refusals.
class NodeApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto runs = NodeRuns::open(dir_.path());
    ASSERT_TRUE(runs);
    runs_ = std::move(*runs);
    runs_->publish({{{"i-proc", 1}, true, RunPlace::kProcess},
                    {{"i-box", 1}, true, RunPlace::kContainer},
                    {{"i-vm", 1}, true, RunPlace::kVm},
                    {{"i-gone", 1}, false, RunPlace::kProcess}});
    api_ = std::make_unique<NodeApi>(*runs_, NodeApiOptions{.data_dir = dir_.path()});
    ASSERT_TRUE(api_->start());
    auto http = client::HttpClient::create("http://" + api_->address());
    ASSERT_TRUE(http);
    http_.emplace(std::move(*http));
  }

  client::HttpResponse exec(std::string query, std::string body, const std::string& secret) {
    client::HttpRequest request{.method = "POST",
                                .target = std::string(kNodeExecPath) + "?" + std::move(query),
                                .body = std::move(body)};
    if (!secret.empty()) request.headers.emplace_back("Authorization", "Bearer " + secret);
    auto response = http_->send(request, std::chrono::seconds(10));
    EXPECT_TRUE(response) << response.error().message;
    return response ? *response : client::HttpResponse{};
  }

  static std::string code(const client::HttpResponse& response) {
    return Json::parse(response.body, nullptr, false).value("code", "");
  }

  TempDir dir_;
  std::unique_ptr<NodeRuns> runs_;
  std::unique_ptr<NodeApi> api_;
  std::optional<client::HttpClient> http_;
};

TEST_F(NodeApiServerTest, EveryRouteNeedsTheCurrentSecret) {
  const std::string body = R"({"command": ["true"]})";
  EXPECT_EQ(exec("instance=i-proc&run=1", body, "").status, 401);
  EXPECT_EQ(exec("instance=i-proc&run=1", body, api_->secret() + "x").status, 401);
  EXPECT_EQ(exec("instance=i-proc&run=1", body, "gna_someone-elses").status, 401);
  // Another agent start draws another secret.
  NodeApi other(*runs_, NodeApiOptions{.data_dir = dir_.path()});
  EXPECT_NE(other.secret(), api_->secret());

  auto forwarded = http_->send({.target = "/i/i-proc/jupyter/"}, std::chrono::seconds(10));
  ASSERT_TRUE(forwarded);
  EXPECT_EQ(forwarded->status, 401);
}

TEST_F(NodeApiServerTest, ExecRefusesWhatItCannotRun) {
  const std::string secret = api_->secret();
  const std::string body = R"({"command": ["true"]})";
  // A container run on an agent without an engine (it cannot have started one): said so.
  auto box = exec("instance=i-box&run=1", body, secret);
  EXPECT_EQ(box.status, 503);
  EXPECT_EQ(code(box), "no_container_runtime");
  // A VM run whose guest agent does not answer (no VM here: no socket): said so.
  auto vm = exec("instance=i-vm&run=1", body, secret);
  EXPECT_EQ(vm.status, 503);
  EXPECT_EQ(code(vm), "guest_agent_unavailable");
  auto gone = exec("instance=i-gone&run=1", body, secret);
  EXPECT_EQ(gone.status, 409);
  EXPECT_EQ(code(gone), "instance_not_running");
  EXPECT_EQ(exec("instance=i-proc&run=2", body, secret).status, 404);
  EXPECT_EQ(exec("instance=i-proc", body, secret).status, 400);
  EXPECT_EQ(exec("instance=i-proc&run=1", R"({"command": []})", secret).status, 400);
  EXPECT_EQ(exec("instance=i-proc&run=1", std::string(70 * 1024, ' '), secret).status, 413);
  // Running, but no launch record (the node's files are not as they should be): a 500 that says
  // so, not a crash.
  auto broken = exec("instance=i-proc&run=1", body, secret);
  EXPECT_EQ(broken.status, 500);
  EXPECT_NE(broken.body.find("launch record"), std::string::npos) << broken.body;
}

}  // namespace
}  // namespace gpurent::agent
