#include "model/file_copy.h"

#include <gtest/gtest.h>

namespace gpurent::model {
namespace {

TEST(FileCopyTest, APathMayNotClimbOrCarryControlCharacters) {
  for (const std::string_view good : {"", ".", "data", "a/b/c", "/data/x", "./a//b/", "a..b"}) {
    EXPECT_TRUE(check_copy_path(good)) << good;
  }
  using std::string_view_literals::operator""sv;
  for (const std::string_view bad :
       {".."sv, "../x"sv, "a/../b"sv, "/data/.."sv, "a/\nb"sv, "a\0b"sv}) {
    const auto checked = check_copy_path(bad);
    ASSERT_FALSE(checked) << bad;
    EXPECT_EQ(checked.error().code, "invalid_path");
  }
  EXPECT_FALSE(check_copy_path(std::string(kMaxCopyPathLength + 1, 'a')));
}

TEST(FileCopyTest, ComponentsLeaveOutEmptyAndDotNames) {
  EXPECT_EQ(path_components("/a//./b/"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(path_components(""), std::vector<std::string>{});
  EXPECT_EQ(path_components("x"), std::vector<std::string>{"x"});
}

TEST(FileCopyTest, UploadIdsAreNeverPaths) {
  EXPECT_TRUE(valid_upload_id("u-abc123"));
  for (const std::string_view bad : {"", "u-", "u-../x", "u-A", "x-abc", "u-a/b"}) {
    EXPECT_FALSE(valid_upload_id(bad)) << bad;
  }
}

}  // namespace
}  // namespace gpurent::model
