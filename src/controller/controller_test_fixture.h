// The controller under a manual clock, with an admin, two funded tenants and one 8-GPU node:
// the fixture the controller's unit tests share.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "common/random.h"
#include "controller/controller.h"
#include "store/store.h"

namespace gpurent::controller {

using model::InstanceState;
using model::Principal;
using model::Role;

constexpr Micros kH100PerSecond = 5'000;  // 18 CNY per GPU-hour

class ControllerTest : public testing::Test {
 protected:
  explicit ControllerTest(ControllerOptions options = {.seed = 7})
      : clock_(from_unix_ms(1'790'000'000'000)), ctl_(clock_, std::move(options)) {
    admin_ = *ctl_.accounts().credentials().authenticate(
        ctl_.accounts().bootstrap_admin(hash_secret("admin-key"), "gpr_admin", 0)->secret_hash);
    alice_ = tenant_principal("alice");
    bob_ = tenant_principal("bob");
    auto token = ctl_.accounts().credentials().create_join_token(
        admin_, "test", std::chrono::hours(1), hash_secret("join"));
    EXPECT_TRUE(token);
    node_ = add_node("node-a", "h100-80g", 8, "GPU-a");
  }

  Principal tenant_principal(const std::string& name) {
    auto tenant = ctl_.accounts().create_tenant(admin_, name);
    EXPECT_TRUE(tenant);
    auto key = ctl_.accounts().credentials().create_api_key(
        admin_, {tenant->id, Role::kTenantAdmin, name, hash_secret(name), ""});
    EXPECT_TRUE(key);
    EXPECT_TRUE(
        ctl_.accounts().topup(admin_, tenant->id, 1'000 * kMicrosPerUnit, "", std::nullopt));
    return *ctl_.accounts().credentials().authenticate(hash_secret(name));
  }

  std::string add_node(const std::string& name, const std::string& type, int gpus,
                       const std::string& uuid_prefix) {
    model::NodeRegistration registration{.name = name,
                                         .cpu_count = 64,
                                         .memory_mb = 512 * 1024,
                                         .simulated = true,
                                         .agent_version = "test",
                                         .benchmarks = true};
    for (int i = 0; i < gpus; ++i) {
      registration.gpus.push_back({uuid_prefix + std::to_string(i), i, type, type, 81920});
    }
    auto result = ctl_.register_node(hash_secret("join"), registration, "cred-" + name,
                                     hash_secret("cred-" + name));
    EXPECT_TRUE(result) << result.error().message;
    return result->node_id;
  }

  model::InstanceSpec spec(int gpus) {
    model::InstanceSpec s;
    s.gpu_types = {"h100-80g"};
    s.gpu_count = gpus;
    s.command = {"sleep", "1000"};
    return s;
  }

  model::Instance launch(const Principal& who, int gpus) { return launch(who, spec(gpus)); }
  model::Instance launch(const Principal& who, model::InstanceSpec s) {
    auto created = ctl_.create_instance(who, std::move(s), std::nullopt, "");
    EXPECT_TRUE(created) << created.error().message;
    return created->instance;
  }

  void report(const std::string& node, std::vector<model::WorkloadStatus> workloads) {
    const int64_t generation = ctl_.fleet().desired_state(node)->generation;
    ASSERT_TRUE(ctl_.apply_report(node, {generation, std::move(workloads)}));
  }

  // The agent says the instance's current run is running (or has exited with `exit_code`).
  void run(const std::string& id, std::optional<int> exit_code = std::nullopt) {
    const auto& instance = get(id);
    std::vector<model::WorkloadStatus> workloads;
    const auto desired = ctl_.fleet().desired_state(instance.node_id);
    for (const auto& workload : desired->workloads) {
      const bool target = workload.instance_id == id;
      workloads.push_back(
          {workload.instance_id, workload.run,
           target && exit_code ? model::WorkloadPhase::kExited : model::WorkloadPhase::kRunning,
           target ? exit_code : std::nullopt, ""});
    }
    report(instance.node_id, std::move(workloads));
  }

  const model::Instance& get(const std::string& id) { return **ctl_.instances().get(admin_, id); }
  Micros balance(const Principal& who) { return *ctl_.accounts().balance(who, who.tenant_id); }

  ManualClock clock_;
  Controller ctl_;
  Principal admin_, alice_, bob_;
  std::string node_;
};

// The same, with a SQLite store in a temporary directory that holds what was committed: for
// tests of what a restart gives back.
class StoredControllerTest : public ControllerTest {
 protected:
  explicit StoredControllerTest(const ControllerOptions& options = ControllerOptions{.seed = 7})
      : ControllerTest(options),
        options_(options),
        dir_(std::filesystem::temp_directory_path() /
             ("gpurent-controller-test-" + std::to_string(os_random_seed()))) {
    std::filesystem::create_directories(dir_);
    store_ = std::move(*store::open_sqlite_store((dir_ / "state.db").string()));
    commit(ctl_);
  }
  ~StoredControllerTest() override { std::filesystem::remove_all(dir_); }

  // What the server's committer does with a controller's changes.
  ChangeSet commit(Controller& ctl) {
    ChangeSet changes = ctl.take_changes(Controller::Form::kStoreRows);
    EXPECT_TRUE(store_->commit(changes));
    return changes;
  }

  // A new controller from what the store holds, as a server restart makes (with the test's
  // options, and this seed).
  std::unique_ptr<Controller> restarted(uint64_t seed) {
    auto snapshot = store_->load();
    EXPECT_TRUE(snapshot) << snapshot.error().message;
    ControllerOptions options = options_;
    options.seed = seed;
    auto ctl = std::make_unique<Controller>(clock_, options);
    const auto restored = ctl->restore(std::move(*snapshot));
    EXPECT_TRUE(restored) << restored.error().message;
    return ctl;
  }

  ControllerOptions options_;
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
};

}  // namespace gpurent::controller
