#include "common/secret_box.h"

#include <gtest/gtest.h>
#include <stdlib.h>  // mkdtemp

#include <filesystem>

#include "common/files.h"

namespace gpurent {
namespace {

namespace fs = std::filesystem;

const std::string kKey(SecretBox::kKeyBytes, 'k');
const std::string kOtherKey(SecretBox::kKeyBytes, 'o');

class SecretBoxFileTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpurent-secrets-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST(SecretBoxTest, WhatIsSealedOpensUnderTheSameKeyAndPurpose) {
  const SecretBox box(kKey);
  const std::string plaintext("the plaintext\0with a NUL", 24);
  const std::string sealed = box.seal(plaintext, "session key");
  EXPECT_TRUE(sealed.starts_with("sealed:v1:")) << sealed;
  EXPECT_EQ(sealed.find("plaintext"), std::string::npos);
  EXPECT_TRUE(is_sealed(sealed));
  EXPECT_FALSE(is_sealed("0123abcd"));
  const auto opened = box.open(sealed, "session key");
  ASSERT_TRUE(opened) << opened.error().message;
  EXPECT_EQ(*opened, plaintext);
  // A fresh nonce per value: the same plaintext never seals to the same text.
  EXPECT_NE(box.seal("same", "p"), box.seal("same", "p"));
  EXPECT_EQ(*box.open(box.seal("", "p"), "p"), "");
}

TEST(SecretBoxTest, AnotherKeyAPurposeOrAChangedCharacterIsRefused) {
  const SecretBox box(kKey, "/etc/gpurent/secrets.key");
  // 24 bytes of nonce, 5 of text, 16 of tag: 45, so the base64 has no padding, and changing any
  // of its characters changes the bytes.
  const std::string sealed = box.seal("12345", "session key");

  const auto wrong_key = SecretBox(kOtherKey).open(sealed, "session key");
  ASSERT_FALSE(wrong_key);
  EXPECT_EQ(wrong_key.error().code, "secret_unsealable");
  EXPECT_FALSE(box.open(sealed, "webhook secret"));  // bound to what it is

  // Every character of the base64 changed in turn: never a wrong plaintext, always refused.
  for (size_t i = std::string_view("sealed:v1:").size(); i < sealed.size(); ++i) {
    std::string tampered = sealed;
    tampered[i] = tampered[i] == 'A' ? 'B' : 'A';
    const auto opened = box.open(tampered, "session key");
    ASSERT_FALSE(opened) << i;
    EXPECT_EQ(opened.error().code, "secret_unsealable");
  }
  EXPECT_FALSE(box.open(sealed.substr(0, sealed.size() - 4), "session key"));  // cut short
  EXPECT_FALSE(box.open("sealed:v1:", "session key"));
  // The message names the key file, for the operator to put the right one back.
  EXPECT_NE(wrong_key.error().message.find("cannot be opened"), std::string::npos);
  EXPECT_NE(box.open(sealed + "x", "session key").error().message.find("/etc/gpurent/secrets.key"),
            std::string::npos);
  // A later version's form is told apart from damage.
  const auto later = box.open("sealed:v2:AAAA", "session key");
  ASSERT_FALSE(later);
  EXPECT_NE(later.error().message.find("sealed:v2"), std::string::npos);
}

TEST_F(SecretBoxFileTest, TheKeyFileIsMadeOnceReadAfterAndRefusedWhenDamagedOrShared) {
  const fs::path path = dir_ / "secrets.key";
  auto made = SecretBox::load_or_create(path.string());
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::file_size(path), SecretBox::kKeyBytes);
  const std::string sealed = made->seal("kept", "p");

  auto again = SecretBox::load_or_create(path.string());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again->open(sealed, "p"), "kept");

  fs::permissions(path, fs::perms::group_read, fs::perm_options::add);
  const auto shared = SecretBox::load_or_create(path.string());
  ASSERT_FALSE(shared);
  EXPECT_EQ(shared.error().code, "invalid_key_file");
  EXPECT_NE(shared.error().message.find("chmod 600"), std::string::npos);

  ASSERT_TRUE(write_file_atomic(path, "short", 0600));
  const auto damaged = SecretBox::load_or_create(path.string());
  ASSERT_FALSE(damaged);  // never a new key over a damaged one
  EXPECT_EQ(damaged.error().code, "invalid_key_file");
  EXPECT_EQ(*read_file(path), "short");
}

TEST(SecretsEqualTest, ComparesWholeSecrets) {
  EXPECT_TRUE(secrets_equal("gpr_abc", "gpr_abc"));
  EXPECT_FALSE(secrets_equal("gpr_abd", "gpr_abc"));
  EXPECT_FALSE(secrets_equal("gpr_ab", "gpr_abc"));
  EXPECT_FALSE(secrets_equal("", "gpr_abc"));
  EXPECT_TRUE(secrets_equal("", ""));
}

}  // namespace
}  // namespace gpurent
