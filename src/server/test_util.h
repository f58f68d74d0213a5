// What the server's unit tests share: a store that keeps nothing, and a controller with its admin
// and one registered node.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/random.h"
#include "controller/controller.h"
#include "store/store.h"

namespace gpurent::server::testing {

// A store of no database: what the host's tests hand the committer. It has no rows to copy.
class RowlessStore : public store::Store {
 public:
  Status read_rows(const std::function<Status(store::RowReader&)>&) override {
    return fail(Error::internal("a test store has no rows"));
  }
  Status write_rows(const std::function<Status(store::RowWriter&)>&) override {
    return fail(Error::internal("a test store has no rows"));
  }
};

class NullStore final : public RowlessStore {
 public:
  Result<controller::Snapshot> load() override { return controller::Snapshot{}; }
  Status commit(const controller::ChangeSet&) override { return {}; }
  Status stage(const controller::ChangeSet&) override { return {}; }
};

struct AdminAndNode {
  model::Principal admin;
  std::string node_id;  // one H100; its agent's credential is "cred"
};

inline AdminAndNode admin_and_node(controller::Controller& controller) {
  const auto admin = *controller.accounts().credentials().authenticate(
      controller.accounts()
          .bootstrap_admin(hash_secret("admin"), "gpr_", 1'000'000'000)
          ->secret_hash);
  EXPECT_TRUE(controller.accounts().credentials().create_join_token(
      admin, "", std::chrono::hours(1), hash_secret("j")));
  model::NodeRegistration registration{.name = "node",
                                       .gpus = {{"GPU-0", 0, "h100-80g", "H100", 81920}},
                                       .cpu_count = 8,
                                       .memory_mb = 1024,
                                       .simulated = true,
                                       .agent_version = "t"};
  auto node = controller.register_node(hash_secret("j"), registration, "cred", hash_secret("cred"));
  EXPECT_TRUE(node);
  return {admin, node ? node->node_id : std::string()};
}

}  // namespace gpurent::server::testing
