#include "cli/args.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "cli/launch_options.h"
#include "common/files.h"

namespace gpurent::cli {
namespace {

TEST(CliParseAmountTest, UnitsAreExact) {
  EXPECT_EQ(*parse_amount("100", false), 100'000'000);
  EXPECT_EQ(*parse_amount("12.5", false), 12'500'000);
  EXPECT_EQ(*parse_amount("0.000001", false), 1);
  // 0.1 + 0.2 style values stay exact: no floating point on the way.
  EXPECT_EQ(*parse_amount("0.3", false), 300'000);
  for (const char* bad : {"", "abc", "1e3", "12.3456789", "1,5", "12.", " 1", "0x10"}) {
    auto amount = parse_amount(bad, false);
    ASSERT_FALSE(amount.has_value()) << bad;
    EXPECT_EQ(amount.error().code, kUsageCode);
  }
}

TEST(CliParseAmountTest, MicrosAreWholeNumbers) {
  EXPECT_EQ(*parse_amount("12500000", true), 12'500'000);
  EXPECT_FALSE(parse_amount("12.5", true).has_value());
  EXPECT_FALSE(parse_amount("99999999999999999999", true).has_value());
}

TEST(CliParseDurationTest, UnitsAndCombinations) {
  EXPECT_EQ(*parse_duration_seconds("90s"), 90);
  EXPECT_EQ(*parse_duration_seconds("30m"), 1800);
  EXPECT_EQ(*parse_duration_seconds("24h"), 86400);
  EXPECT_EQ(*parse_duration_seconds("7d"), 7 * 86400);
  EXPECT_EQ(*parse_duration_seconds("1h30m"), 5400);
  EXPECT_EQ(*parse_duration_seconds("3600"), 3600);
  for (const char* bad : {"", "0", "0s", "h", "10x", "1.5h", "-5m", "24h ", "99999999d"}) {
    EXPECT_FALSE(parse_duration_seconds(bad).has_value()) << bad;
  }
}

TEST(CliParseEnvTest, NameEqualsValue) {
  EXPECT_EQ(*parse_env_assignment("EPOCHS=3"),
            (std::pair<std::string, std::string>{"EPOCHS", "3"}));
  EXPECT_EQ(*parse_env_assignment("A_1=x=y"), (std::pair<std::string, std::string>{"A_1", "x=y"}));
  EXPECT_EQ(*parse_env_assignment("EMPTY="), (std::pair<std::string, std::string>{"EMPTY", ""}));
  for (const char* bad : {"NOVALUE", "=x", "1A=x", "A-B=x"}) {
    EXPECT_FALSE(parse_env_assignment(bad).has_value()) << bad;
  }
}

TEST(CliSshKeysTest, KeysAsTheyAreOrFilesOfThem) {
  const std::string key =
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICwa4sBUcPlIif1WN+56sNJou2Z1eM/g65b0pLsYOSty";
  std::string dir = (std::filesystem::temp_directory_path() / "gpurent-keys-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::filesystem::path file = std::filesystem::path(dir) / "keys.pub";
  ASSERT_TRUE(write_file_atomic(file, "# mine\n" + key + " alice@laptop\r\n\n" + key + "\n"));
  const auto keys = read_ssh_keys({key, file.string()});
  ASSERT_TRUE(keys) << keys.error().message;
  EXPECT_EQ(*keys, (std::vector<std::string>{key, key + " alice@laptop", key}));

  // A private key, a file without keys, a path that is not there: each named.
  ASSERT_TRUE(write_file_atomic(file, "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n"));
  const auto private_key = read_ssh_keys({file.string()});
  ASSERT_FALSE(private_key);
  EXPECT_NE(private_key.error().message.find("not the private key"), std::string::npos);
  ASSERT_TRUE(write_file_atomic(file, "# none\n"));
  EXPECT_FALSE(read_ssh_keys({file.string()}));
  const auto missing = read_ssh_keys({dir + "/nope.pub"});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("nope.pub"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpurent::cli
