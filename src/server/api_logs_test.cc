// Log uploads through the API: written on the log thread, answered on the I/O thread.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <filesystem>
#include <thread>

#include "common/random.h"
#include "server/api.h"
#include "server/host.h"
#include "server/log_store.h"
#include "server/test_util.h"

namespace gpurent::server {
namespace {

class ApiLogsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpurent-api-logs-test-" + std::to_string(os_random_seed()));
    const auto admin = testing::admin_and_node(controller_).admin;
    model::InstanceSpec spec;
    spec.gpu_types = {"h100-80g"};
    spec.command = {"true"};
    auto created = controller_.create_instance(admin, spec, std::nullopt, "");
    ASSERT_TRUE(created);
    instance_ = created->instance.id;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Sends one request through the API on the I/O thread and runs it to its answer.
  Response call(Api& api, Request request) {
    Response response;
    const auto io_thread = std::this_thread::get_id();
    asio::co_spawn(
        io_,
        [&, request = std::move(request)]() mutable -> asio::awaitable<void> {
          response = co_await api.handle(std::move(request));
          answered_on_io_thread_ = std::this_thread::get_id() == io_thread;
        },
        asio::detached);
    io_.restart();
    io_.run();
    return response;
  }

  Request upload(int64_t offset, std::string data) {
    return {"POST",
            "/v1/agent/logs",
            {{"instance", instance_}, {"run", "1"}, {"offset", std::to_string(offset)}},
            std::move(data),
            "Bearer cred",
            "",
            "application/octet-stream"};
  }

  std::filesystem::path dir_;
  asio::io_context io_;
  ManualClock clock_{from_unix_ms(1'790'000'000'000)};
  controller::Controller controller_{clock_, {}};
  testing::NullStore store_;
  std::string instance_;
  bool answered_on_io_thread_ = false;
};

TEST_F(ApiLogsTest, UploadsAreWrittenAndAnsweredWithTheSizeOrTheGap) {
  ControllerHost host(io_, controller_, store_);
  LogStore logs(dir_.string());
  Api api(host, logs);
  auto answer = call(api, upload(0, "hello\n"));
  EXPECT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(Json::parse(answer.body)["size"], 6);
  EXPECT_TRUE(answered_on_io_thread_);
  EXPECT_EQ(*logs.read(instance_, 1, 0, 100), "hello\n");

  answer = call(api, upload(10, "late\n"));  // past the end: the stored size comes back
  EXPECT_EQ(answer.status, 409);
  EXPECT_EQ(Json::parse(answer.body)["size"], 6);

  Request other = upload(0, "x");
  other.query["instance"] = "i-unknown";
  EXPECT_EQ(call(api, std::move(other)).status, 404);
}

}  // namespace
}  // namespace gpurent::server
