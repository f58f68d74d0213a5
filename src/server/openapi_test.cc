// Keeps docs/openapi.json (embedded in the binary) in step with the routes the API registers.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/openapi_document.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/random.h"
#include "controller/controller.h"
#include "server/api.h"
#include "server/host.h"
#include "server/log_store.h"
#include "store/store.h"

namespace gpurent::server {
namespace {

using Route = std::pair<std::string, std::string>;  // (lower-case method, path template)

constexpr std::array<std::string_view, 8> kHttpMethods = {"get",     "put",  "post",  "delete",
                                                          "options", "head", "patch", "trace"};

bool is_http_method(std::string_view key) {
  return std::find(kHttpMethods.begin(), kHttpMethods.end(), key) != kHttpMethods.end();
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

class OpenApi : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpurent-openapi-test-" + std::to_string(os_random_seed()));
    std::filesystem::create_directories(dir_);
    auto store = store::open_sqlite_store((dir_ / "gpurent.db").string());
    ASSERT_TRUE(store) << store.error().message;
    store_ = std::move(*store);
    controller_ = std::make_unique<controller::Controller>(
        clock_, controller::ControllerOptions{.seed = os_random_seed()});
    host_ = std::make_unique<ControllerHost>(io_, *controller_, *store_);
    logs_ = std::make_unique<LogStore>((dir_ / "logs").string());
    api_ = std::make_unique<Api>(*host_, *logs_);

    const std::string_view text = embedded::openapi_document();
    document_ = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  }

  void TearDown() override {
    api_.reset();
    logs_.reset();
    host_.reset();
    controller_.reset();
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::set<Route> router_routes() const {
    std::set<Route> out;
    for (const auto& [method, path] : api_->routes()) out.emplace(lower(method), path);
    return out;
  }

  // Every (method, path) under `paths`, with a pointer to its operation object.
  std::vector<std::pair<Route, const Json*>> document_operations() const {
    std::vector<std::pair<Route, const Json*>> out;
    const auto paths = document_.find("paths");
    if (paths == document_.end() || !paths->is_object()) return out;
    for (const auto& [path, item] : paths->items()) {
      if (!item.is_object()) continue;
      for (const auto& [key, operation] : item.items()) {
        if (is_http_method(key)) out.push_back({{key, path}, &operation});
      }
    }
    return out;
  }

  std::filesystem::path dir_;
  ManualClock clock_{from_unix_ms(1'700'000'000'000)};
  asio::io_context io_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<controller::Controller> controller_;
  std::unique_ptr<ControllerHost> host_;
  std::unique_ptr<LogStore> logs_;
  std::unique_ptr<Api> api_;
  Json document_;
};

TEST_F(OpenApi, DocumentIsOpenApi31Json) {
  ASSERT_FALSE(document_.is_discarded()) << "docs/openapi.json is not valid JSON";
  ASSERT_TRUE(document_.is_object());
  EXPECT_EQ(document_.value("openapi", ""), "3.1.0");
  ASSERT_TRUE(document_.contains("paths"));
  EXPECT_TRUE(document_["paths"].is_object());
}

TEST_F(OpenApi, EveryRouteIsDocumented) {
  ASSERT_FALSE(document_.is_discarded());
  const auto routes = router_routes();
  ASSERT_FALSE(routes.empty());
  std::set<Route> documented;
  for (const auto& [route, operation] : document_operations()) documented.insert(route);
  for (const auto& route : routes) {
    EXPECT_TRUE(documented.contains(route))
        << route.first << " " << route.second << " is routed but missing from docs/openapi.json";
  }
}

TEST_F(OpenApi, EveryDocumentedOperationIsRouted) {
  ASSERT_FALSE(document_.is_discarded());
  const auto routes = router_routes();
  const auto operations = document_operations();
  ASSERT_FALSE(operations.empty());
  for (const auto& [route, operation] : operations) {
    EXPECT_TRUE(routes.contains(route))
        << route.first << " " << route.second
        << " is in docs/openapi.json but the server has no such route";
  }
}

TEST_F(OpenApi, OperationsHaveUniqueIdsAndASuccessResponse) {
  ASSERT_FALSE(document_.is_discarded());
  std::set<std::string> ids;
  for (const auto& [route, operation] : document_operations()) {
    const std::string where = route.first + " " + route.second;
    const auto id = operation->find("operationId");
    if (id == operation->end() || !id->is_string() || id->get<std::string>().empty()) {
      ADD_FAILURE() << where << " has no operationId";
    } else {
      EXPECT_TRUE(ids.insert(id->get<std::string>()).second)
          << where << " repeats operationId " << id->get<std::string>();
    }
    const auto responses = operation->find("responses");
    ASSERT_TRUE(responses != operation->end() && responses->is_object())
        << where << " has no responses";
    bool has_success = false;
    for (const auto& [status, response] : responses->items()) {
      // An upgrade's success is its 101 (GET /v1/instances/{id}/ssh).
      if ((status.size() == 3 && status[0] == '2') || status == "101") has_success = true;
    }
    EXPECT_TRUE(has_success) << where << " has no 2xx (or 101) response";
  }
}

}  // namespace
}  // namespace gpurent::server
