// Console sessions and revoked keys in Accounts (accounts.h): what they authenticate, what a
// revocation takes with it, and what a restart keeps.
#include <gtest/gtest.h>

#include "controller/controller_test_fixture.h"

namespace gpurent::controller {
namespace {

class SessionsTest : public StoredControllerTest {
 protected:
  model::ApiKey sign_in(const Principal& who, const std::string& secret) {
    auto session = ctl_.accounts().credentials().create_session(
        who, hash_secret(secret), secret.substr(0, 4), std::chrono::hours(12));
    EXPECT_TRUE(session) << session.error().message;
    return *session;
  }
};

TEST_F(SessionsTest, ASessionActsAsItsKeyUntilItExpires) {
  const model::ApiKey session = sign_in(alice_, "browser-secret");
  EXPECT_EQ(session.session_of, alice_.key_id);
  EXPECT_EQ(session.expires_at, clock_.now() + std::chrono::hours(12));
  const auto as = ctl_.accounts().credentials().authenticate(hash_secret("browser-secret"));
  ASSERT_TRUE(as);
  EXPECT_EQ(as->tenant_id, alice_.tenant_id);
  EXPECT_EQ(as->role, alice_.role);
  EXPECT_EQ(as->key_id, session.id);

  clock_.advance(std::chrono::hours(12));
  EXPECT_FALSE(ctl_.accounts().credentials().authenticate(hash_secret("browser-secret")));
  EXPECT_TRUE(
      ctl_.accounts().credentials().authenticate(hash_secret("alice")));  // the key itself lives on
}

TEST_F(SessionsTest, ASessionCannotMakeSessionsAndIsNotListedAsAKey) {
  const model::ApiKey session = sign_in(alice_, "browser-secret");
  const Principal as_session =
      *ctl_.accounts().credentials().authenticate(hash_secret("browser-secret"));
  EXPECT_EQ(ctl_.accounts()
                .credentials()
                .create_session(as_session, hash_secret("again"), "", std::chrono::hours(1))
                .error()
                .kind,
            ErrorKind::kPermissionDenied);
  const auto keys = ctl_.accounts().credentials().api_keys(alice_, alice_.tenant_id);
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0]->id, alice_.key_id);
  EXPECT_NE(keys[0]->id, session.id);
}

TEST_F(SessionsTest, RevokingAKeyEndsItAndItsSessionsAndARestartKeepsThatSo) {
  sign_in(alice_, "first-browser");
  sign_in(alice_, "second-browser");
  // Another tenant's key does not exist for bob; a session is revoked only by itself.
  EXPECT_EQ(ctl_.accounts().credentials().revoke_api_key(bob_, alice_.key_id).error().code,
            "api_key_not_found");

  const auto revoked = ctl_.accounts().credentials().revoke_api_key(alice_, alice_.key_id);
  ASSERT_TRUE(revoked);
  EXPECT_EQ(revoked->revoked_at, clock_.now());
  for (const char* secret : {"alice", "first-browser", "second-browser"}) {
    EXPECT_FALSE(ctl_.accounts().credentials().authenticate(hash_secret(secret))) << secret;
  }
  EXPECT_EQ(ctl_.accounts().credentials().revoke_api_key(admin_, alice_.key_id).error().code,
            "api_key_not_found");
  EXPECT_TRUE(ctl_.accounts().credentials().api_keys(admin_, alice_.tenant_id).empty());

  commit(ctl_);
  const auto again = restarted(9);
  for (const char* secret : {"alice", "first-browser", "second-browser"}) {
    EXPECT_FALSE(again->accounts().credentials().authenticate(hash_secret(secret))) << secret;
  }
  EXPECT_TRUE(again->accounts().credentials().authenticate(hash_secret("bob")));
}

TEST_F(SessionsTest, SigningOutRevokesTheSessionAlone) {
  const model::ApiKey session = sign_in(alice_, "browser-secret");
  const Principal as_session =
      *ctl_.accounts().credentials().authenticate(hash_secret("browser-secret"));
  // The key it came from cannot revoke it as a key; the session itself can.
  EXPECT_FALSE(ctl_.accounts().credentials().revoke_api_key(alice_, session.id));
  ASSERT_TRUE(ctl_.accounts().credentials().revoke_api_key(as_session, session.id));
  EXPECT_FALSE(ctl_.accounts().credentials().authenticate(hash_secret("browser-secret")));
  EXPECT_TRUE(ctl_.accounts().credentials().authenticate(hash_secret("alice")));
}

TEST_F(SessionsTest, OnlyAnAdminRevokesAnAdminKey) {
  const auto op_key = ctl_.accounts().credentials().create_api_key(
      admin_, {admin_.tenant_id, Role::kOperator, "op", hash_secret("op"), ""});
  ASSERT_TRUE(op_key);
  const Principal op = *ctl_.accounts().credentials().authenticate(hash_secret("op"));
  EXPECT_EQ(ctl_.accounts().credentials().revoke_api_key(op, admin_.key_id).error().kind,
            ErrorKind::kPermissionDenied);
  EXPECT_TRUE(ctl_.accounts().credentials().revoke_api_key(admin_, op_key->id));
}

}  // namespace
}  // namespace gpurent::controller
