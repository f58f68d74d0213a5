#include <gtest/gtest.h>

#include <algorithm>

#include "controller/controller.h"
#include "controller/controller_test_fixture.h"

namespace gpurent::controller {
namespace {

using model::VolumeMount;

class VolumesTest : public ControllerTest {
 protected:
  model::Volume create(const Principal& who, std::string name = "data", int size_gb = 100,
                       std::string node_id = "") {
    auto created = ctl_.volumes().create(who, {std::move(name), size_gb, std::move(node_id)});
    EXPECT_TRUE(created) << created.error().message;
    return created->volume;
  }
  model::InstanceSpec mounting(int gpus, std::vector<VolumeMount> volumes) {
    auto s = spec(gpus);
    s.volumes = std::move(volumes);
    return s;
  }
  std::string error_code(const Status& status) { return status ? "" : status.error().code; }
  template <class T>
  std::string error_code(const Result<T>& result) {
    return result ? "" : result.error().code;
  }
  std::vector<std::string> listed(const Principal& who) {
    std::vector<std::string> ids;
    for (const auto* volume : ctl_.volumes().list(who)) ids.push_back(volume->id);
    return ids;
  }
  // The agent reports the instance's current run gone (its process was stopped).
  void exited(const std::string& id) { run(id, 143); }
};

TEST_F(VolumesTest, AVolumeIsItsTenantsAlone) {
  const auto volume = create(alice_);
  EXPECT_EQ(volume.tenant_id, alice_.tenant_id);
  EXPECT_TRUE(volume.id.starts_with("v-"));
  EXPECT_TRUE(volume.node_id.empty());
  EXPECT_EQ(volume.price_per_gb_month, model::kDefaultStoragePricePerGbMonth);
  EXPECT_EQ(listed(alice_), std::vector<std::string>{volume.id});
  EXPECT_TRUE(listed(bob_).empty());
  EXPECT_EQ(listed(admin_), std::vector<std::string>{volume.id});
  EXPECT_TRUE(ctl_.volumes().list(admin_, bob_.tenant_id).empty());
  EXPECT_EQ((*ctl_.volumes().get(alice_, volume.id))->name, "data");
  EXPECT_EQ(error_code(ctl_.volumes().get(bob_, volume.id)), "volume_not_found");
  EXPECT_EQ(error_code(ctl_.volumes().remove(bob_, volume.id)), "volume_not_found");
  // Nor may bob mount it: as unknown to him as a made-up id, and so to an operator's own work.
  EXPECT_EQ(error_code(ctl_.create_instance(bob_, mounting(1, {{volume.id, "/data"}}), {}, "")),
            "volume_not_found");
  EXPECT_EQ(error_code(ctl_.create_instance(admin_, mounting(1, {{volume.id, "/data"}}), {}, "")),
            "volume_not_found");
  EXPECT_EQ(error_code(ctl_.create_instance(alice_, mounting(1, {{"v-nope", "/data"}}), {}, "")),
            "volume_not_found");
  EXPECT_TRUE(ctl_.volumes().get(alice_, volume.id));  // still there
}

TEST_F(VolumesTest, AVolumeIsNamedByItsIdOrItsName) {
  const auto volume = create(alice_, "datasets");
  EXPECT_EQ((*ctl_.volumes().get(alice_, "datasets"))->id, volume.id);
  EXPECT_EQ(error_code(ctl_.volumes().get(bob_, "datasets")), "volume_not_found");
  // A mount by name is kept by id.
  const auto created = ctl_.create_instance(alice_, mounting(1, {{"datasets", "/data"}}), {}, "");
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_EQ(created->instance.spec.volumes.at(0).volume_id, volume.id);
  const auto typo = ctl_.volumes().get(alice_, "dataset");
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message.find("did you mean datasets?"), std::string::npos)
      << typo.error().message;
}

TEST_F(VolumesTest, BadRequestsAreRefusedWithTheirReason) {
  EXPECT_EQ(error_code(ctl_.volumes().create(alice_, {"data", 0, ""})), "invalid_field");
  EXPECT_EQ(error_code(ctl_.volumes().create(alice_, {"data", model::kMaxVolumeSizeGb + 1, ""})),
            "invalid_field");
  EXPECT_EQ(error_code(ctl_.volumes().create(alice_, {"bad name", 1, ""})), "invalid_field");
  EXPECT_EQ(error_code(ctl_.volumes().create(alice_, {"data", 1, node_})), "forbidden");
  EXPECT_EQ(error_code(ctl_.volumes().create(admin_, {"data", 1, "n-nope"})), "node_not_found");
  EXPECT_TRUE(ctl_.volumes().list(admin_).empty());

  const auto volume = create(alice_);
  EXPECT_EQ(error_code(ctl_.create_instance(alice_, mounting(1, {{volume.id, "/proc/x"}}), {}, "")),
            "invalid_field");
  EXPECT_EQ(error_code(ctl_.create_instance(alice_, mounting(1, {{volume.id, "rel"}}), {}, "")),
            "invalid_field");
  // A gang spans nodes; a node-local volume cannot follow it.
  model::JobSpec job{.task = mounting(1, {{volume.id, "/data"}}), .nodes = 2};
  EXPECT_EQ(error_code(ctl_.create_job(alice_, job, {}, "")), "invalid_field");
  EXPECT_TRUE(ctl_.instances().list(admin_, {}, "", 10)->items.empty());
}

TEST_F(VolumesTest, IdempotencyKeyReturnsTheFirstVolume) {
  const auto first = ctl_.volumes().create(alice_, {"data", 10, ""}, "key-1", "fp-1");
  ASSERT_TRUE(first);
  const auto again = ctl_.volumes().create(alice_, {"data", 10, ""}, "key-1", "fp-1");
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->volume.id, first->volume.id);
  EXPECT_EQ(error_code(ctl_.volumes().create(alice_, {"other", 10, ""}, "key-1", "fp-2")),
            "idempotency_key_reused");
  EXPECT_EQ(ctl_.volumes().list(alice_).size(), 1u);
}

TEST_F(VolumesTest, TheFirstPlacementChoosesItsNodeAndPinsLaterWorkThere) {
  const std::string other = add_node("node-b", "h100-80g", 8, "GPU-b");
  const auto volume = create(alice_);
  const auto first = launch(alice_, mounting(1, {{volume.id, "/data"}}));
  ASSERT_EQ(first.state, InstanceState::kStarting);
  const std::string home = first.node_id;
  const std::string away = home == node_ ? other : node_;
  EXPECT_EQ((*ctl_.volumes().get(alice_, volume.id))->node_id, home);

  // The node's desired state lists the volume and hands the mount to the agent.
  const auto desired = ctl_.fleet().desired_state(home);
  EXPECT_EQ(desired->volumes, std::vector<std::string>{volume.id});
  ASSERT_EQ(desired->workloads.size(), 1u);
  EXPECT_EQ(desired->workloads[0].volumes, (std::vector<VolumeMount>{{volume.id, "/data"}}));
  EXPECT_TRUE(ctl_.fleet().desired_state(away)->volumes.empty());

  // 8 GPUs fit only on the other node, which is empty; the volume keeps the work waiting for
  // its own node instead.
  const auto big = launch(alice_, mounting(8, {{volume.id, "/data"}}));
  EXPECT_EQ(get(big.id).state, InstanceState::kPending);
  EXPECT_NE(get(big.id).reason.find(home), std::string::npos) << get(big.id).reason;
  const auto unpinned = launch(bob_, 8);  // work without volumes still goes there
  EXPECT_EQ(get(unpinned.id).node_id, away);

  ASSERT_TRUE(ctl_.delete_instance(alice_, first.id));
  exited(first.id);
  EXPECT_EQ(get(big.id).state, InstanceState::kStarting);
  EXPECT_EQ(get(big.id).node_id, home);
  EXPECT_TRUE(ctl_.check_invariants());
}

TEST_F(VolumesTest, AnOperatorMayPlaceAVolumeAndItsWorkFollows) {
  const std::string other = add_node("node-b", "h100-80g", 8, "GPU-b");
  ASSERT_TRUE(
      ctl_.accounts().topup(admin_, admin_.tenant_id, 100 * kMicrosPerUnit, "", std::nullopt));
  ctl_.take_changes();
  const auto volume = create(admin_, "pinned", 10, other);
  EXPECT_EQ(volume.node_id, other);
  EXPECT_EQ(ctl_.fleet().desired_state(other)->volumes, std::vector<std::string>{volume.id});
  EXPECT_EQ(ctl_.take_changes().woken_nodes, std::set<std::string>{other});  // agent hears of it
  const auto instance = launch(admin_, mounting(1, {{volume.id, "/data"}}));
  EXPECT_EQ(instance.node_id, other);
  // Volumes on two different nodes leave nowhere to go: refused at once.
  const auto here = create(admin_, "here", 10, node_);
  EXPECT_EQ(error_code(ctl_.create_instance(
                admin_, mounting(1, {{volume.id, "/a"}, {here.id, "/b"}}), {}, "")),
            "volumes_on_different_nodes");
}

TEST_F(VolumesTest, AnArrayJobWithAVolumeRunsEveryTaskOnTheVolumesNode) {
  const std::string other = add_node("node-b", "h100-80g", 8, "GPU-b");
  const auto volume = create(alice_);
  model::JobSpec job{.task = mounting(4, {{volume.id, "/data"}}), .array = 3};
  const auto created = ctl_.create_job(alice_, job, {}, "");
  ASSERT_TRUE(created) << created.error().message;
  const std::string home = (*ctl_.volumes().get(alice_, volume.id))->node_id;
  ASSERT_FALSE(home.empty());
  // Two tasks of 4 GPUs fill the volume's node; the third waits for it, though the other node is
  // empty.
  const auto members = ctl_.instances().list(alice_, {.job_id = created->job.id}, "", 10);
  ASSERT_EQ(members->items.size(), 3u);
  int placed = 0;
  for (const auto* member : members->items) {
    if (member->state == InstanceState::kStarting) {
      EXPECT_EQ(member->node_id, home);
      ++placed;
    } else {
      EXPECT_EQ(member->state, InstanceState::kPending);
    }
  }
  EXPECT_EQ(placed, 2);
  EXPECT_TRUE(ctl_.fleet().desired_state(home == node_ ? other : node_)->workloads.empty());
  EXPECT_TRUE(ctl_.check_invariants());
}

TEST_F(VolumesTest, DeletingAVolumeInUseIsRefusedUntilItsInstancesAreGone) {
  const auto volume = create(alice_);
  const auto instance = launch(alice_, mounting(1, {{volume.id, "/data"}}));
  run(instance.id);
  const auto refused = ctl_.volumes().remove(alice_, volume.id);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "volume_in_use");
  EXPECT_EQ(refused.error().kind, ErrorKind::kConflict);
  EXPECT_NE(refused.error().message.find(instance.id), std::string::npos);

  // A stopped instance keeps its disk and its volumes.
  ASSERT_TRUE(ctl_.stop_instance(alice_, instance.id));
  exited(instance.id);
  EXPECT_EQ(get(instance.id).state, InstanceState::kStopped);
  EXPECT_EQ(error_code(ctl_.volumes().remove(alice_, volume.id)), "volume_in_use");
  // Started again it mounts the same volume on the same node.
  ASSERT_TRUE(ctl_.start_instance(alice_, instance.id));
  EXPECT_EQ(get(instance.id).node_id, node_);
  EXPECT_EQ(ctl_.fleet().desired_state(node_)->workloads.at(0).volumes.at(0).volume_id, volume.id);

  ASSERT_TRUE(ctl_.delete_instance(alice_, instance.id));
  exited(instance.id);
  EXPECT_EQ(get(instance.id).state, InstanceState::kTerminated);
  const int64_t generation = ctl_.fleet().desired_state(node_)->generation;
  const auto deleted = ctl_.volumes().remove(alice_, volume.id);
  ASSERT_TRUE(deleted) << deleted.error().message;
  EXPECT_EQ(deleted->state, model::VolumeState::kDeleted);
  EXPECT_EQ(deleted->deleted_at, clock_.now());
  // Gone for the tenant, and from the node's desired state (its agent deletes the data).
  EXPECT_EQ(error_code(ctl_.volumes().get(alice_, volume.id)), "volume_not_found");
  EXPECT_EQ(error_code(ctl_.volumes().remove(alice_, volume.id)), "volume_not_found");
  EXPECT_TRUE(ctl_.volumes().list(alice_).empty());
  EXPECT_TRUE(ctl_.fleet().desired_state(node_)->volumes.empty());
  EXPECT_GT(ctl_.fleet().desired_state(node_)->generation, generation);
  EXPECT_EQ(error_code(ctl_.create_instance(alice_, mounting(1, {{volume.id, "/data"}}), {}, "")),
            "volume_not_found");
  // Its storage line stays on the bill.
  ASSERT_EQ(ctl_.volumes().of_tenant(alice_.tenant_id).size(), 1u);
}

TEST_F(VolumesTest, StorageIsBilledPerSecondOfItsLifeWithOneRoundingAndNoDoubleCharge) {
  const Micros before = balance(alice_);
  ctl_.take_changes();
  const auto volume = create(alice_, "data", 100);
  // 100 GB x 0.5 per GB-month = 50 per 30 days; 61 s = 50e6 * 61 / 2,592,000 micros, floored.
  clock_.advance(Millis(61'400));
  ctl_.tick();
  const auto* metered = *ctl_.volumes().get(alice_, volume.id);
  EXPECT_EQ(metered->billed_seconds, 61);
  EXPECT_EQ(metered->charged, 1'176);  // 1176.69...
  EXPECT_EQ(before - balance(alice_), 1'176);
  auto changes = ctl_.take_changes();
  ASSERT_EQ(changes.transfers.size(), 1u);
  EXPECT_EQ(changes.transfers[0].id, "volume:" + volume.id + ":61");
  EXPECT_EQ(changes.transfers[0].reference, volume.id);
  ASSERT_EQ(changes.volumes.size(), 1u);  // its metering state goes to the store with it

  ctl_.tick();  // within the billing interval: nothing is metered
  EXPECT_TRUE(ctl_.take_changes().transfers.empty());

  // The remainder carries: 60.6 s more is 121 whole seconds in all, charged as one line.
  clock_.advance(Millis(60'600));
  ctl_.tick();
  EXPECT_EQ((*ctl_.volumes().get(alice_, volume.id))->billed_seconds, 122);
  EXPECT_EQ((*ctl_.volumes().get(alice_, volume.id))->charged, 2'353);  // 2353.39...
  // Deleting meters the last part at once.
  clock_.advance(Millis(9'000));
  ASSERT_TRUE(ctl_.volumes().remove(alice_, volume.id));
  const auto* usage = ctl_.volumes().of_tenant(alice_.tenant_id).at(0);
  EXPECT_EQ(usage->billed_seconds, 131);
  EXPECT_EQ(usage->charged, Micros{50'000'000} * 131 / 2'592'000);
  EXPECT_EQ(before - balance(alice_), usage->charged);
  // A deleted volume is billed no more.
  clock_.advance(Millis(3'600'000));
  ctl_.tick();
  EXPECT_EQ(before - balance(alice_), usage->charged);
  EXPECT_EQ(ctl_.accounts().ledger_total(), 0);
}

}  // namespace
}  // namespace gpurent::controller
