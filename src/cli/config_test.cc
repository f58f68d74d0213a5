#include "cli/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <toml.hpp>

namespace gpurent::cli {
namespace {

namespace fs = std::filesystem;

class CliConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpurent-config-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  EnvLookup env() const {
    return [this](std::string_view name) -> std::optional<std::string> {
      const auto it = vars_.find(std::string(name));
      if (it == vars_.end() || it->second.empty()) return std::nullopt;
      return it->second;
    };
  }

  void write_file(const fs::path& path, std::string_view text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }

  fs::path dir_;
  std::map<std::string, std::string> vars_;
};

TEST_F(CliConfigTest, FindsTheFile) {
  EXPECT_FALSE(config_path(env()).has_value());
  vars_["HOME"] = "/home/u";
  EXPECT_EQ(*config_path(env()), "/home/u/.config/gpurent/config.toml");
  vars_["XDG_CONFIG_HOME"] = "relative/ignored";
  EXPECT_EQ(*config_path(env()), "/home/u/.config/gpurent/config.toml");
  vars_["XDG_CONFIG_HOME"] = "/xdg";
  EXPECT_EQ(*config_path(env()), "/xdg/gpurent/config.toml");
  vars_["GPURENT_CONFIG"] = "/etc/g.toml";
  EXPECT_EQ(*config_path(env()), "/etc/g.toml");
}

TEST_F(CliConfigTest, FlagsBeatEnvironmentBeatsFile) {
  vars_["XDG_CONFIG_HOME"] = dir_.string();
  write_file(dir_ / "gpurent" / "config.toml", "url = \"http://file:1\"\napi_key = \"gpr_file\"\n");

  auto from_file = resolve_settings(env(), {});
  ASSERT_TRUE(from_file.has_value()) << from_file.error().message;
  EXPECT_EQ(from_file->url, "http://file:1");
  EXPECT_EQ(from_file->api_key, "gpr_file");

  vars_["GPURENT_URL"] = "http://env:2";
  auto from_env = resolve_settings(env(), {});
  ASSERT_TRUE(from_env.has_value());
  EXPECT_EQ(from_env->url, "http://env:2");
  EXPECT_EQ(from_env->api_key, "gpr_file");

  vars_["GPURENT_API_KEY"] = "gpr_env";
  auto from_flags = resolve_settings(env(), {.url = "http://flag:3"});
  ASSERT_TRUE(from_flags.has_value());
  EXPECT_EQ(from_flags->url, "http://flag:3");
  EXPECT_EQ(from_flags->api_key, "gpr_env");

  auto all_flags = resolve_settings(env(), {.url = "http://flag:3", .api_key = "gpr_flag"});
  ASSERT_TRUE(all_flags.has_value());
  EXPECT_EQ(all_flags->api_key, "gpr_flag");
}

TEST_F(CliConfigTest, DefaultsWithoutAnyFile) {
  vars_["GPURENT_CONFIG"] = (dir_ / "missing.toml").string();
  auto settings = resolve_settings(env(), {});
  ASSERT_TRUE(settings.has_value());
  EXPECT_EQ(settings->url, kDefaultUrl);
  EXPECT_EQ(settings->api_key, "");
}

TEST_F(CliConfigTest, ReportsAMalformedFile) {
  vars_["GPURENT_CONFIG"] = (dir_ / "bad.toml").string();
  write_file(dir_ / "bad.toml", "url = http://unquoted\n");
  auto settings = resolve_settings(env(), {});
  ASSERT_FALSE(settings.has_value());
  EXPECT_EQ(settings.error().code, "invalid_config");

  write_file(dir_ / "bad.toml", "url = 8080\n");
  settings = resolve_settings(env(), {});
  ASSERT_FALSE(settings.has_value());
  EXPECT_NE(settings.error().message.find("'url' must be a string"), std::string::npos);

  // An explicit command line does not need the file at all.
  EXPECT_TRUE(resolve_settings(env(), {.url = "http://a:1", .api_key = "k"}).has_value());
}

TEST_F(CliConfigTest, WritesAPrivateFileThatReadsBack) {
  const fs::path path = dir_ / "new" / "gpurent" / "config.toml";
  const std::string tricky = "gpr_\"quoted\"\\back\nline\x01";
  ASSERT_TRUE(write_config(path, {.url = "http://127.0.0.1:8080", .api_key = tricky}).has_value());

  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(path.parent_path().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);

  auto values = read_config(path);
  ASSERT_TRUE(values.has_value()) << values.error().message;
  EXPECT_EQ(values->url, "http://127.0.0.1:8080");
  EXPECT_EQ(values->api_key, tricky);

  // Replacing keeps the mode, and leaves out what is not set.
  ASSERT_TRUE(write_config(path, {.url = "http://other:1"}).has_value());
  values = read_config(path);
  ASSERT_TRUE(values.has_value());
  EXPECT_EQ(values->url, "http://other:1");
  EXPECT_FALSE(values->api_key.has_value());
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_EQ(std::distance(fs::directory_iterator(path.parent_path()), {}), 1);
}

TEST_F(CliConfigTest, SavingAConnectionKeepsAKeyThatIsNotReplaced) {
  vars_["GPURENT_CONFIG"] = (dir_ / "config.toml").string();
  auto path = save_connection(env(), "http://127.0.0.1:8080", std::string("gpr_admin"));
  ASSERT_TRUE(path.has_value()) << path.error().message;
  EXPECT_EQ(*path, dir_ / "config.toml");

  ASSERT_TRUE(save_connection(env(), "http://127.0.0.1:9090", std::nullopt).has_value());
  auto settings = resolve_settings(env(), {});
  ASSERT_TRUE(settings.has_value());
  EXPECT_EQ(settings->url, "http://127.0.0.1:9090");
  EXPECT_EQ(settings->api_key, "gpr_admin");

  write_file(dir_ / "config.toml", "url = [\n");
  EXPECT_FALSE(save_connection(env(), "http://x:1", std::nullopt).has_value());
}

}  // namespace
}  // namespace gpurent::cli
