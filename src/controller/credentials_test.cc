// API keys' roles, scopes and expiry (credentials.h): a key never grants more than its maker
// has, members and read-only keys manage no keys, and all of it survives a restart. And the
// audit log (audit_log.h): who reads which entries, and what a restart keeps.
#include <gtest/gtest.h>

#include "controller/controller_test_fixture.h"

namespace gpurent::controller {
namespace {

class CredentialsTest : public StoredControllerTest {
 protected:
  Credentials& credentials() { return ctl_.accounts().credentials(); }

  // A key `maker` makes, and the principal it authenticates as.
  Result<Principal> make(const Principal& maker, NewApiKey request) {
    const std::string secret = "secret-" + std::to_string(++made_);
    request.secret_hash = hash_secret(secret);
    GPURENT_TRY(key, credentials().create_api_key(maker, std::move(request)));
    (void)key;
    return *credentials().authenticate(hash_secret(secret));
  }
  int made_ = 0;
};

TEST_F(CredentialsTest, ATenantAdminMakesKeysOfItsRoleOrLessNeverMore) {
  const auto member = make(alice_, {.role = Role::kTenantMember});
  ASSERT_TRUE(member) << member.error().message;
  EXPECT_EQ(member->role, Role::kTenantMember);
  EXPECT_EQ(member->tenant_id, alice_.tenant_id);
  EXPECT_TRUE(make(alice_, {.role = Role::kReadOnly}));
  // By default a key has its maker's role.
  EXPECT_EQ(make(alice_, {})->role, Role::kTenantAdmin);
  // An operator's key for a tenant is a tenant-admin's unless it says otherwise.
  EXPECT_EQ(make(admin_, {.tenant_id = alice_.tenant_id})->role, Role::kTenantAdmin);
  const auto operator_key = make(alice_, {.role = Role::kOperator});
  ASSERT_FALSE(operator_key);
  EXPECT_EQ(operator_key.error().kind, ErrorKind::kPermissionDenied);
}

TEST_F(CredentialsTest, MembersAndReadOnlyKeysManageNoKeys) {
  const Principal member = *make(alice_, {.role = Role::kTenantMember});
  const Principal reader = *make(alice_, {.role = Role::kReadOnly});
  for (const Principal& who : {member, reader}) {
    EXPECT_EQ(make(who, {.role = Role::kReadOnly}).error().kind, ErrorKind::kPermissionDenied);
    EXPECT_TRUE(credentials().api_keys(who, alice_.tenant_id).empty());
    EXPECT_EQ(credentials().revoke_api_key(who, alice_.key_id).error().kind,
              ErrorKind::kPermissionDenied);
  }
  // Any key may end itself.
  EXPECT_TRUE(credentials().revoke_api_key(reader, reader.key_id));
  EXPECT_FALSE(credentials().authenticate(credentials().api_key(reader.key_id)->secret_hash));
}

TEST_F(CredentialsTest, AScopedKeyGrantsOnlyScopesItHas) {
  const auto scoped = make(alice_, {.scopes = {"instances:write", "billing:read"}});
  ASSERT_TRUE(scoped) << scoped.error().message;
  EXPECT_TRUE(scoped->scopes.permits(model::ScopeArea::kInstances, true));
  EXPECT_FALSE(scoped->scopes.permits(model::ScopeArea::kVolumes, false));
  // The scopes are kept in canonical form.
  EXPECT_EQ(credentials().api_key(scoped->key_id)->scopes,
            (std::vector<std::string>{"instances:write", "billing:read"}));
  // It may hand on what it has...
  EXPECT_TRUE(make(*scoped, {.scopes = {"instances:read"}}));
  // ...but not more.
  EXPECT_EQ(make(*scoped, {.scopes = {"volumes:read"}}).error().kind, ErrorKind::kPermissionDenied);
  // Asking for none gives the maker's own.
  const auto inherited = make(*scoped, {});
  ASSERT_TRUE(inherited) << inherited.error().message;
  EXPECT_EQ(inherited->scopes, scoped->scopes);
  EXPECT_EQ(make(alice_, {.scopes = {"gpus:read"}}).error().code, "invalid_scope");
}

TEST_F(CredentialsTest, AKeyExpiresAndNeverOutlivesItsMaker) {
  const Timestamp soon = clock_.now() + std::chrono::hours(1);
  const auto short_lived = make(alice_, {.expires_at = soon});
  ASSERT_TRUE(short_lived);
  // Its child asking for a longer life (or none) gets its maker's.
  const auto child = make(*short_lived, {.role = Role::kReadOnly});
  ASSERT_TRUE(child);
  EXPECT_EQ(credentials().api_key(child->key_id)->expires_at, soon);
  EXPECT_EQ(make(alice_, {.expires_at = clock_.now()}).error().code, "invalid_expiry");
  clock_.advance(std::chrono::hours(1));
  EXPECT_FALSE(credentials().authenticate(credentials().api_key(child->key_id)->secret_hash));
  EXPECT_FALSE(credentials().authenticate(credentials().api_key(short_lived->key_id)->secret_hash));
}

TEST_F(CredentialsTest, RolesScopesAndExpirySurviveARestart) {
  const auto scoped = make(alice_, {.role = Role::kTenantMember,
                                    .scopes = {"jobs:write"},
                                    .expires_at = clock_.now() + std::chrono::hours(2)});
  ASSERT_TRUE(scoped);
  const std::string hash = credentials().api_key(scoped->key_id)->secret_hash;
  commit(ctl_);
  const auto again = restarted(9)->accounts().credentials().authenticate(hash);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->role, Role::kTenantMember);
  EXPECT_EQ(again->scopes, scoped->scopes);
}

TEST_F(CredentialsTest, TheAuditLogIsReadByOperatorsAndEachTenantsAdmins) {
  const auto entry = [](const Principal& who, std::string action) {
    return model::AuditRecord{.tenant_id = who.tenant_id,
                              .key_id = who.key_id,
                              .role = std::string(model::to_string(who.role)),
                              .address = "198.51.100.4",
                              .action = std::move(action),
                              .target = "/v1/instances",
                              .status = 201,
                              .outcome = "ok"};
  };
  ctl_.audit().record(entry(alice_, "POST /v1/instances"));
  ctl_.audit().record(entry(bob_, "POST /v1/volumes"));
  ctl_.audit().record({.address = "203.0.113.9", .action = "POST /v1/session", .status = 401});
  const auto everything = ctl_.audit().list(admin_, {}, 10);
  ASSERT_TRUE(everything);
  ASSERT_EQ(everything->size(), 3u);
  EXPECT_EQ((*everything)[0]->seq, 1);
  EXPECT_EQ((*everything)[2]->at, clock_.now());
  const auto alices = ctl_.audit().list(alice_, {}, 10);
  ASSERT_TRUE(alices);
  ASSERT_EQ(alices->size(), 1u);
  EXPECT_EQ((*alices)[0]->action, "POST /v1/instances");
  // A tenant's filter does not reach past its own tenant; an operator's does.
  EXPECT_EQ(ctl_.audit().list(alice_, {.tenant_id = bob_.tenant_id}, 10)->size(), 1u);
  EXPECT_EQ(ctl_.audit().list(admin_, {.tenant_id = bob_.tenant_id}, 10)->size(), 1u);
  EXPECT_EQ(ctl_.audit().list(admin_, {.after_seq = 2}, 10)->size(), 1u);
  const Principal member = *make(alice_, {.role = Role::kTenantMember});
  EXPECT_EQ(ctl_.audit().list(member, {}, 10).error().kind, ErrorKind::kPermissionDenied);

  commit(ctl_);
  auto after = restarted(11);
  const auto kept = after->audit().list(admin_, {}, 10);
  ASSERT_TRUE(kept);
  ASSERT_EQ(kept->size(), 3u);
  EXPECT_EQ((*kept)[1]->action, "POST /v1/volumes");
  EXPECT_EQ((*kept)[2]->status, 401);
  // The log goes on from where it was.
  EXPECT_EQ(after->audit().record(entry(alice_, "DELETE /v1/volumes/{id}")).seq, 4);
}

}  // namespace
}  // namespace gpurent::controller
