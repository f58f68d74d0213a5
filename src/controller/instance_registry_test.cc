#include "controller/instance_registry.h"

#include <gtest/gtest.h>

#include "controller/component_test_fixture.h"

namespace gpurent::controller {
namespace {

using model::InstanceState;

const model::Principal kAlice{"t-alice", "key-a", model::Role::kTenantAdmin};
const model::Principal kBob{"t-bob", "key-b", model::Role::kTenantAdmin};
const model::Principal kOperator{"", "key-op", model::Role::kOperator};

class InstanceRegistryTest : public ComponentTest {
 protected:
  model::Instance& add(const std::string& tenant, const std::string& name = "") {
    model::InstanceSpec spec;
    spec.name = name;
    spec.gpu_count = 1;
    return registry_.add(tenant, std::move(spec));
  }

  static std::vector<std::string> ids(const InstancePage& page) {
    std::vector<std::string> out;
    for (const auto* instance : page.items) out.push_back(instance->id);
    return out;
  }

  InstanceRegistry registry_{{clock_, rng_}};
};

TEST_F(InstanceRegistryTest, ANewInstanceIsPendingNowAndNamedByItsIdUnlessNamed) {
  clock_.advance(Millis(5'000));
  const model::Instance& unnamed = add("t-alice");
  EXPECT_EQ(unnamed.id.rfind("i-", 0), 0u);
  EXPECT_EQ(unnamed.spec.name, unnamed.id);
  EXPECT_EQ(unnamed.state, InstanceState::kPending);
  EXPECT_EQ(unnamed.created_at, clock_.now());
  EXPECT_EQ(unnamed.queued_at, clock_.now());
  EXPECT_EQ(add("t-alice", "train").spec.name, "train");
  EXPECT_NE(add("t-alice").id, unnamed.id);
  EXPECT_EQ(registry_.all().size(), 3u);
}

TEST_F(InstanceRegistryTest, AnInstanceIsFoundByIdOrItsTenantsNameAndIsNobodyElses) {
  const std::string id = add("t-alice", "train").id;
  EXPECT_EQ((*registry_.get(kAlice, id))->id, id);
  EXPECT_EQ((*registry_.get(kAlice, "train"))->id, id);
  EXPECT_EQ((*registry_.get(kOperator, id))->id, id);
  EXPECT_EQ(registry_.get(kBob, id).error().code, "instance_not_found");
  EXPECT_EQ(registry_.get(kBob, "train").error().code, "instance_not_found");

  const std::string second = add("t-alice", "train").id;
  EXPECT_EQ(registry_.get(kAlice, "train").error().code, "ambiguous_name");
  // A deleted instance's name is free: the name finds the one left.
  registry_.at(second).state = InstanceState::kTerminated;
  EXPECT_EQ((*registry_.get(kAlice, "train"))->id, id);
  EXPECT_EQ((*registry_.get(kAlice, second))->id, second);  // by id, still
}

TEST_F(InstanceRegistryTest, ListingsPageInCreationOrderAndACursorMustBeTheCallersInstance) {
  // Ids are random: creation order is not id order.
  const std::string a1 = add("t-alice").id;
  const std::string b1 = add("t-bob").id;
  const std::string a2 = add("t-alice").id;
  const std::string a3 = add("t-alice").id;
  registry_.at(a3).state = InstanceState::kRunning;

  const auto first = registry_.list(kAlice, {}, "", 2);
  ASSERT_TRUE(first);
  EXPECT_EQ(ids(*first), (std::vector<std::string>{a1, a2}));
  ASSERT_TRUE(first->next_cursor);
  const auto second = registry_.list(kAlice, {}, *first->next_cursor, 2);
  EXPECT_EQ(ids(*second), std::vector<std::string>{a3});
  EXPECT_FALSE(second->next_cursor);

  EXPECT_EQ(ids(*registry_.list(kOperator, {}, "", 10)),
            (std::vector<std::string>{a1, b1, a2, a3}));
  EXPECT_EQ(ids(*registry_.list(kOperator, {.tenant_id = "t-bob"}, "", 10)),
            std::vector<std::string>{b1});
  // A tenant's filter by tenant is ignored: it sees its own.
  EXPECT_EQ(ids(*registry_.list(kAlice, {.tenant_id = "t-bob"}, "", 10)),
            (std::vector<std::string>{a1, a2, a3}));
  EXPECT_EQ(ids(*registry_.list(kAlice, {.state = InstanceState::kRunning}, "", 10)),
            std::vector<std::string>{a3});

  EXPECT_EQ(registry_.list(kAlice, {}, b1, 10).error().code, "invalid_query");
  EXPECT_EQ(registry_.list(kAlice, {}, "i-made-up", 10).error().code, "invalid_query");
}

TEST_F(InstanceRegistryTest, JobMembersAreListedOnlyWithTheirJob) {
  const std::string own = add("t-alice").id;
  model::Instance& member = add("t-alice");
  member.job_id = "j-1";
  EXPECT_EQ(ids(*registry_.list(kAlice, {}, "", 10)), std::vector<std::string>{own});
  EXPECT_EQ(ids(*registry_.list(kAlice, {.job_id = "j-1"}, "", 10)),
            std::vector<std::string>{member.id});
}

TEST_F(InstanceRegistryTest, RestoredInstancesKeepTheOrderTheyAreRestoredIn) {
  for (const char* id : {"i-z", "i-a", "i-m"}) {
    model::Instance instance;
    instance.id = id;
    instance.tenant_id = "t-alice";
    registry_.restore(std::move(instance));
  }
  EXPECT_EQ(ids(*registry_.list(kAlice, {}, "", 10)),
            (std::vector<std::string>{"i-z", "i-a", "i-m"}));
  EXPECT_EQ(ids(*registry_.list(kAlice, {}, "i-a", 10)), std::vector<std::string>{"i-m"});
}

TEST_F(InstanceRegistryTest, AVolumeIsMountedByTheInstancesNotDeletedThatMountIt) {
  model::Instance& user = add("t-alice");
  user.spec.volumes.push_back({.volume_id = "v-1", .mount_path = "/data"});
  model::Instance& gone = add("t-alice");
  gone.spec.volumes.push_back({.volume_id = "v-1", .mount_path = "/data"});
  gone.state = InstanceState::kTerminated;
  add("t-alice");
  EXPECT_EQ(registry_.mounted_by("v-1"), std::vector<std::string>{user.id});
  EXPECT_TRUE(registry_.mounted_by("v-2").empty());
}

}  // namespace
}  // namespace gpurent::controller
