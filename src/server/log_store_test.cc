#include "server/log_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/random.h"

namespace gpurent::server {
namespace {

class LogStoreTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpurent-logs-test-" + std::to_string(os_random_seed()));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

TEST_F(LogStoreTest, AppendsAtOffsetsTrimsRepeatsAndRefusesGaps) {
  LogStore logs(dir_.string());
  EXPECT_EQ(logs.size("i-1", 1), 0);
  EXPECT_EQ(*logs.append("i-1", 1, 0, "hello\n"), 6);
  EXPECT_EQ(*logs.append("i-1", 1, 3, "lo\nworld\n"), 12);  // the repeated "lo\n" is dropped
  EXPECT_EQ(*logs.append("i-1", 1, 0, "hello\n"), 12);      // nothing new
  const auto gap = logs.append("i-1", 1, 20, "x");
  ASSERT_FALSE(gap);
  EXPECT_EQ(gap.error().code, "log_offset_gap");
  EXPECT_EQ(*logs.read("i-1", 1, 0, 100), "hello\nworld\n");
  EXPECT_EQ(*logs.append("i-1", 2, 0, "second run\n"), 11);  // another run, same directory
  EXPECT_EQ(*logs.read("i-1", 2, 0, 100), "second run\n");
  EXPECT_EQ(*logs.read("i-2", 1, 0, 100), "");
}

TEST_F(LogStoreTest, ADirectoryRemovedBehindItsBackIsMadeAgain) {
  LogStore logs(dir_.string());
  ASSERT_TRUE(logs.append("i-1", 1, 0, "a\n"));
  std::filesystem::remove_all(dir_);  // it remembers having made i-1's directory
  EXPECT_EQ(*logs.append("i-1", 2, 0, "b\n"), 2);
  EXPECT_EQ(*logs.read("i-1", 2, 0, 100), "b\n");
}

TEST_F(LogStoreTest, ACappedLogKeepsTheAgentsCountInItsSidecar) {
  LogStore logs(dir_.string());
  const std::string chunk((1 << 20) + 1, 'x');  // the 64th crosses the cap
  int64_t offset = 0;
  for (int i = 0; i < 65; ++i) {
    auto size = logs.append("i-1", 1, offset, chunk);
    ASSERT_TRUE(size);
    offset = *size;
  }
  EXPECT_EQ(offset, 65 * ((1LL << 20) + 1));
  EXPECT_EQ(logs.size("i-1", 1), offset);  // the agent's count, not the file's
  const auto tail = logs.read("i-1", 1, kMaxRunLogBytes, 1000);
  ASSERT_TRUE(tail);
  EXPECT_NE(tail->find("log truncated"), std::string::npos);
}

}  // namespace
}  // namespace gpurent::server
