// Route access (server/access.h): each route's area, and what each role and scope reaches.
#include "server/access.h"

#include <gtest/gtest.h>

namespace gpurent::server {
namespace {

using model::Role;
using model::ScopeArea;
using model::ScopeSet;

model::Principal key(Role role, std::vector<std::string> scopes = {}) {
  return {"t-1", "k-1", role, *ScopeSet::parse(scopes)};
}

TEST(AccessTest, RoutesBelongToTheirAreaAndPostsToCollectionsCreate) {
  const auto launch = route_access("POST", "/v1/instances");
  ASSERT_TRUE(launch);
  EXPECT_EQ(launch->area, ScopeArea::kInstances);
  EXPECT_TRUE(launch->writes && launch->creates && launch->audited);
  const auto stop = route_access("POST", "/v1/instances/{id}/stop");
  ASSERT_TRUE(stop);
  EXPECT_TRUE(stop->writes);
  EXPECT_FALSE(stop->creates);
  const auto read = route_access("GET", "/v1/billing/invoices/{id}");
  ASSERT_TRUE(read);
  EXPECT_EQ(read->area, ScopeArea::kBilling);
  EXPECT_FALSE(read->writes || read->audited);
  // An estimate and a quote compute an answer: reads, though POSTed.
  EXPECT_FALSE(route_access("POST", "/v1/estimate")->writes);
  EXPECT_FALSE(route_access("POST", "/v1/reservations/quote")->writes);
  // Prefixes match whole segments only.
  EXPECT_FALSE(route_access("GET", "/v1/instancesx"));
  EXPECT_FALSE(route_access("GET", "/v1/agent/desired"));
}

TEST(AccessTest, ReadOnlyKeysReadAndChangeNothing) {
  const auto reader = key(Role::kReadOnly);
  EXPECT_TRUE(route_access("GET", "/v1/instances")->permits(reader));
  const auto refused = route_access("POST", "/v1/instances")->permits(reader);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kPermissionDenied);
  // Signing out is open to every key, and audited.
  const auto sign_out = route_access("DELETE", "/v1/session");
  EXPECT_TRUE(sign_out->permits(reader));
  EXPECT_TRUE(sign_out->audited);
}

TEST(AccessTest, KeysAndTheAuditLogNeedATenantAdmin) {
  for (const char* pattern : {"/v1/api-keys", "/v1/audit"}) {
    const auto access = route_access("GET", pattern);
    ASSERT_TRUE(access) << pattern;
    EXPECT_FALSE(access->permits(key(Role::kTenantMember))) << pattern;
    EXPECT_FALSE(access->permits(key(Role::kReadOnly))) << pattern;
    EXPECT_TRUE(access->permits(key(Role::kTenantAdmin))) << pattern;
    EXPECT_TRUE(access->permits(key(Role::kOperator))) << pattern;
  }
  EXPECT_TRUE(route_access("POST", "/v1/volumes")->permits(key(Role::kTenantMember)));
}

TEST(AccessTest, ScopesNarrowWhatARoleReaches) {
  const auto instances_only = key(Role::kTenantAdmin, {"instances:write"});
  EXPECT_TRUE(route_access("POST", "/v1/instances/{id}/stop")->permits(instances_only));
  EXPECT_FALSE(route_access("GET", "/v1/billing/balance")->permits(instances_only));
  const auto reads = key(Role::kTenantAdmin, {"*:read"});
  EXPECT_TRUE(route_access("GET", "/v1/volumes")->permits(reads));
  const auto refused = route_access("DELETE", "/v1/volumes/{id}")->permits(reads);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("volumes:write"), std::string::npos);
  // Routes of no area (who am I, the catalog) are open to every valid key.
  EXPECT_TRUE(route_access("GET", "/v1/whoami")->permits(key(Role::kReadOnly, {"jobs:read"})));
}

}  // namespace
}  // namespace gpurent::server
