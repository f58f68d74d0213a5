// `gpurent cp` through the tenant proxy: what is checked before a copy is forwarded, and the grant
// that lets the node fetch the upload.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <filesystem>
#include <variant>

#include "common/random.h"
#include "server/host.h"
#include "server/proxy.h"
#include "server/test_util.h"
#include "server/upload_store.h"

namespace gpurent::server {
namespace {

class ProxyCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpurent-proxy-copy-test-" + std::to_string(os_random_seed()));
    const auto [admin, node] = testing::admin_and_node(controller_);
    node_ = node;
    for (const auto& [name, key] : {std::pair{"acme", "acme-key"}, {"other", "other-key"}}) {
      auto tenant = controller_.accounts().create_tenant(admin, name);
      ASSERT_TRUE(tenant);
      ASSERT_TRUE(controller_.accounts().credentials().create_api_key(
          admin, {tenant->id, model::Role::kTenantAdmin, "k", hash_secret(key), "gpr_"}));
      tenants_.push_back(tenant->id);
    }
    // An operator of acme's places a volume on the node, and makes one that is on none yet.
    ASSERT_TRUE(controller_.accounts().credentials().create_api_key(
        admin, {tenants_[0], model::Role::kOperator, "op", hash_secret("op-key"), "gpr_"}));
    const auto op = *controller_.accounts().credentials().authenticate(hash_secret("op-key"));
    placed_ = controller_.volumes().create(op, {"placed", 1, node_})->volume.id;
    unplaced_ = controller_.volumes().create(op, {"unplaced", 1, ""})->volume.id;

    uploads_ = std::move(*UploadStore::open(dir_, clock_));
    const std::string bytes = "archive";
    auto upload = uploads_->create(tenants_[0], 7, sha256_hex(bytes));
    ASSERT_TRUE(upload);
    ASSERT_TRUE(uploads_->append(tenants_[0], upload->id, 0, bytes));
    upload_ = upload->id;
    partial_ = uploads_->create(tenants_[0], 9, sha256_hex("something"))->id;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  net::ForwardDecision decide(TenantProxy& proxy, const std::string& path,
                              std::map<std::string, std::string> query, const std::string& key) {
    net::RequestHead head{
        "POST", path, path, std::move(query), {{"Authorization", "Bearer " + key}}};
    net::ForwardDecision decision;
    asio::co_spawn(
        io_, [&]() -> asio::awaitable<void> { decision = co_await proxy.decide(std::move(head)); },
        asio::detached);
    io_.restart();
    io_.run();
    return decision;
  }

  static std::string code_of(const net::ForwardDecision& decision) {
    const auto* response = std::get_if<net::Response>(&decision);
    return response ? Json::parse(response->body).value("code", "") : "forwarded";
  }

  std::filesystem::path dir_;
  asio::io_context io_;
  ManualClock clock_{from_unix_ms(1'790'000'000'000)};
  controller::Controller controller_{clock_, {}};
  testing::NullStore store_;
  std::string node_;
  std::vector<std::string> tenants_;
  std::string placed_, unplaced_, upload_, partial_;
  std::unique_ptr<UploadStore> uploads_;
};

TEST_F(ProxyCopyTest, ClaimsTheCopyRoutes) {
  EXPECT_TRUE(TenantProxy::claims("POST", "/v1/instances/i-a/files"));
  EXPECT_TRUE(TenantProxy::claims("POST", "/v1/volumes/v-a/files"));
  EXPECT_FALSE(TenantProxy::claims("GET", "/v1/volumes/v-a/files"));
  EXPECT_FALSE(TenantProxy::claims("POST", "/v1/volumes/v-a"));
  EXPECT_FALSE(TenantProxy::claims("POST", "/v1/volumes//files"));
}

TEST_F(ProxyCopyTest, AChecksCopyIsForwardedAndGrantsItsNodeTheUpload) {
  ControllerHost host(io_, controller_, store_);
  const ConsoleSessions console(SessionSigner::random());
  TenantProxy proxy(host, SessionSigner::random(), console);
  proxy.set_uploads(uploads_.get());
  const std::string files = "/v1/volumes/" + placed_ + "/files";
  // The node has not said where its API is yet.
  EXPECT_EQ(code_of(decide(proxy, files, {{"upload", upload_}}, "acme-key")), "node_unreachable");
  proxy.node_reported(node_, "127.0.0.1:7000", "node-secret");
  EXPECT_FALSE(proxy.node_may_read(node_, upload_));

  const auto decision = decide(proxy, files, {{"upload", upload_}, {"path", "a b/c"}}, "acme-key");
  const auto* to = std::get_if<net::ForwardTo>(&decision);
  ASSERT_NE(to, nullptr) << code_of(decision);
  EXPECT_EQ(to->port, 7000);
  EXPECT_EQ(to->target,
            fmt::format("/v1/node/volume-files?volume={}&tenant={}&upload={}&path=a%20b%2Fc",
                        placed_, tenants_[0], upload_));
  EXPECT_TRUE(proxy.node_may_read(node_, upload_));
  EXPECT_FALSE(proxy.node_may_read(node_, partial_));
  EXPECT_FALSE(proxy.node_may_read("n-other", upload_));
}

TEST_F(ProxyCopyTest, RefusesOthersMissingOrIncompleteUploadsBadPathsAndUnplacedVolumes) {
  ControllerHost host(io_, controller_, store_);
  const ConsoleSessions console(SessionSigner::random());
  TenantProxy proxy(host, SessionSigner::random(), console);
  proxy.set_uploads(uploads_.get());
  proxy.node_reported(node_, "127.0.0.1:7000", "node-secret");
  const std::string files = "/v1/volumes/" + placed_ + "/files";
  EXPECT_EQ(code_of(decide(proxy, files, {{"upload", upload_}}, "other-key")), "volume_not_found");
  EXPECT_EQ(code_of(decide(proxy, files, {}, "acme-key")), "invalid_query");
  EXPECT_EQ(code_of(decide(proxy, files, {{"upload", "u-nope"}}, "acme-key")), "upload_not_found");
  EXPECT_EQ(code_of(decide(proxy, files, {{"upload", partial_}}, "acme-key")), "upload_incomplete");
  EXPECT_EQ(code_of(decide(proxy, files, {{"upload", upload_}, {"path", "a/../../b"}}, "acme-key")),
            "invalid_path");
  EXPECT_EQ(code_of(decide(proxy, "/v1/volumes/" + unplaced_ + "/files", {{"upload", upload_}},
                           "acme-key")),
            "volume_not_placed");
  EXPECT_EQ(code_of(decide(proxy, "/v1/instances/i-none/files", {{"upload", upload_}}, "acme-key")),
            "instance_not_found");
  EXPECT_FALSE(proxy.node_may_read(node_, upload_));
}

}  // namespace
}  // namespace gpurent::server
